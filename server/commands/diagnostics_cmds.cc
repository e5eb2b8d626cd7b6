// SLOWLOG, LATENCY and MONITOR: what an operator runs to see which commands are slow and what
// clients send. The records they read are kept by dispatch for every command (core/slowlog.h,
// core/latency_monitor.h, core/command_metrics.h, core/monitors.h).
#include "commands/command_table.h"
#include "commands/families.h"
#include "commands/subcommands.h"
#include "commands/util.h"

namespace larder::server {

namespace {

// --- SLOWLOG ---

void SlowlogGet(Ctx& ctx) {
  if (ctx.argc() > 3) return ReplySubcommandSyntax(ctx);
  int64_t count = 10;
  if (ctx.argc() == 3 && (!ParseInt64(ctx.argv[2], &count) || count < -1)) {
    return ctx.w.Error("ERR count should be greater than or equal to -1");
  }
  const std::vector<SlowLogEntry> entries = ctx.core.slowlog.Newest(count);
  ctx.w.ArrayHeader(entries.size());
  for (const SlowLogEntry& e : entries) {
    ctx.w.ArrayHeader(6);
    ctx.w.Integer(static_cast<int64_t>(e.id));
    ctx.w.Integer(e.unix_seconds);
    ctx.w.Integer(static_cast<int64_t>(e.duration_usec));
    ctx.w.ArrayHeader(e.args.size());
    for (const std::string& a : e.args) ctx.w.BulkString(a);
    ctx.w.BulkString(e.client_addr);
    ctx.w.BulkString(e.client_name);
  }
}

void SlowlogLen(Ctx& ctx) {
  ctx.w.Integer(static_cast<int64_t>(ctx.core.slowlog.Len()));
}

void SlowlogReset(Ctx& ctx) {
  ctx.core.slowlog.Reset();
  ctx.w.SimpleString("OK");
}

constexpr SubcommandRow kSlowlogSubcommands[] = {
    {"get", -2, SlowlogGet, "GET [<count>]",
     "Return top <count> entries from the slowlog (default: 10, -1 mean all).\n"
     "Entries are made of:\n"
     "id, timestamp, time in microseconds, arguments array, client IP and port,\n"
     "client name"},
    {"len", 2, SlowlogLen, "LEN", "Return the length of the slowlog."},
    {"reset", 2, SlowlogReset, "RESET", "Reset the slowlog."},
};

void Slowlog(Ctx& ctx) {
  RunSubcommand(ctx, kSlowlogSubcommands);
}

// --- LATENCY ---

void LatencyLatest(Ctx& ctx) {
  const auto events = ctx.core.latency.LatestOfEach();
  ctx.w.ArrayHeader(events.size());
  for (const LatencyMonitor::Latest& e : events) {
    ctx.w.ArrayHeader(4);
    ctx.w.BulkString(e.event);
    ctx.w.Integer(e.latest.unix_seconds);
    ctx.w.Integer(static_cast<int64_t>(e.latest.ms));
    ctx.w.Integer(static_cast<int64_t>(e.max_ms));
  }
}

void LatencyHistory(Ctx& ctx) {
  const auto samples = ctx.core.latency.History(ctx.argv[2]);
  ctx.w.ArrayHeader(samples.size());
  for (const LatencyMonitor::Sample& s : samples) {
    ctx.w.ArrayHeader(2);
    ctx.w.Integer(s.unix_seconds);
    ctx.w.Integer(static_cast<int64_t>(s.ms));
  }
}

void LatencyReset(Ctx& ctx) {
  std::vector<std::string> events(ctx.argv.begin() + 2, ctx.argv.end());
  ctx.w.Integer(static_cast<int64_t>(ctx.core.latency.Reset(events)));
}

// One command's calls and cumulative latency distribution, as Redis's LATENCY HISTOGRAM: the
// count of calls faster than each power-of-two number of microseconds, for the powers at which
// it grows.
void WriteHistogram(Ctx& ctx, const CommandStats& stats) {
  std::vector<uint64_t> bounds;  // 2^j + 1: the calls of at most 2^j microseconds
  for (uint64_t power = 1; power != 0; power <<= 1) bounds.push_back(power + 1);
  const LatencyHistogram::Cumulative counts = stats.latency.CountsBelow(bounds);
  std::vector<std::pair<uint64_t, uint64_t>> cdf;
  uint64_t last = 0;
  for (size_t i = 0; i < bounds.size() && last < counts.total; ++i) {
    if (counts.below[i] != last) cdf.emplace_back(bounds[i] - 1, counts.below[i]);
    last = counts.below[i];
  }
  ctx.w.MapHeader(2);
  ctx.w.BulkString("calls");
  ctx.w.Integer(static_cast<int64_t>(stats.calls.load()));
  ctx.w.BulkString("histogram_usec");
  ctx.w.MapHeader(cdf.size());
  for (const auto& [bound, count] : cdf) {
    ctx.w.Integer(static_cast<int64_t>(bound));
    ctx.w.Integer(static_cast<int64_t>(count));
  }
}

void LatencyHistogramOf(Ctx& ctx) {
  const CommandStatsTable& table = ctx.core.commands;
  std::vector<size_t> ids;
  if (ctx.argc() == 2) {
    for (size_t id = 0; id < table.size(); ++id) ids.push_back(id);
  } else {
    for (size_t i = 2; i < ctx.argc(); ++i) {
      const CommandSpec* spec = FindCommand(ctx.argv[i]);
      if (spec != nullptr) ids.push_back(spec->id);
    }
  }
  std::erase_if(ids, [&](size_t id) { return table.at(id).latency.count() == 0; });
  ctx.w.MapHeader(ids.size());
  for (size_t id : ids) {
    ctx.w.BulkString(table.name(id));
    WriteHistogram(ctx, table.at(id));
  }
}

void LatencyDoctor(Ctx& ctx) {
  const auto events = ctx.core.latency.LatestOfEach();
  const auto cfg = ctx.core.config.snapshot();
  std::string out;
  if (cfg->latency_monitor_threshold == 0) {
    out =
        "The latency monitor is disabled: set latency-monitor-threshold <milliseconds> to record "
        "commands at least that slow.\n";
  } else if (events.empty()) {
    out = "No command took " + std::to_string(cfg->latency_monitor_threshold) +
          " ms or more since the latency monitor was last reset.\n";
  }
  for (const LatencyMonitor::Latest& e : events) {
    out += e.event + ": latest " + std::to_string(e.latest.ms) + " ms at " +
           std::to_string(e.latest.unix_seconds) + ", max " + std::to_string(e.max_ms) + " ms. ";
    out += e.event == "command"
               ? "Commands that read or write values wait for the disk: see INFO larder "
                 "(pending_bytes) and SLOWLOG GET for which.\n"
               : "Commands that never touch the disk were slow: the server's CPU was busy.\n";
  }
  ctx.w.Verbatim("txt", out);
}

constexpr SubcommandRow kLatencySubcommands[] = {
    {"latest", 2, LatencyLatest, "LATEST", "Return the latest latency samples for all events."},
    {"history", 3, LatencyHistory, "HISTORY <event>",
     "Return the latency history of the given event."},
    {"reset", -2, LatencyReset, "RESET [<event> ...]",
     "Reset latency data of one or more <event> classes (default: reset all data for all event "
     "classes)."},
    {"histogram", -2, LatencyHistogramOf, "HISTOGRAM [COMMAND ...]",
     "Return a cumulative distribution of latencies in the format of a histogram for the "
     "specified command names. If no commands are specified then all histograms are replied."},
    {"doctor", 2, LatencyDoctor, "DOCTOR", "Return a human readable latency analysis report."},
};

void Latency(Ctx& ctx) {
  RunSubcommand(ctx, kLatencySubcommands);
}

// --- MONITOR ---

// From here on the client receives every command the server runs (core/monitors.h). RESET or
// disconnecting ends it.
void Monitor(Ctx& ctx) {
  if (ctx.in_exec) return ctx.w.Error("ERR MONITOR isn't allowed for DENY BLOCKING client");
  ctx.core.monitors.Add(ctx.client);
  ctx.w.SimpleString("OK");
}

constexpr CommandRow kRows[] = {
    {"slowlog", -2, "admin loading stale", kNoKeys, Slowlog, kSlowlogSubcommands},
    {"latency", -2, "admin loading stale", kNoKeys, Latency, kLatencySubcommands},
    {"monitor", 1, "admin loading stale fast", kNoKeys, Monitor},
};

}  // namespace

std::span<const CommandRow> DiagnosticsCommands() {
  return kRows;
}

}  // namespace larder::server
