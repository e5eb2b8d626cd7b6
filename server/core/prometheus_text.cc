#include "core/prometheus_text.h"

#include <sys/resource.h>

#include <cstdio>
#include <string_view>

#include "core/process_usage.h"

namespace larder::server {

namespace {

// Seconds (all of them microsecond counts underneath): six decimals, exact.
std::string Number(double v) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.6f", v);
  return buf;
}

std::string Number(uint64_t v) {
  return std::to_string(v);
}

// `text` with the format's escapes: backslash and newline, and in a label value (`quotes`) the
// double quote too.
std::string Escaped(std::string_view text, bool quotes) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || (quotes && c == '"')) {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

class Page {
 public:
  void Family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_.append(name);
    out_ += ' ';
    out_ += Escaped(help, /*quotes=*/false);
    out_ += "\n# TYPE ";
    out_.append(name);
    out_ += ' ';
    out_.append(type);
    out_ += '\n';
  }
  // One sample; `labels` is "" or `a="x",b="y"` (values need no escaping: command names and
  // numbers).
  void Sample(std::string_view name, std::string_view labels, const std::string& value) {
    out_.append(name);
    if (!labels.empty()) {
      out_ += '{';
      out_.append(labels);
      out_ += '}';
    }
    out_ += ' ';
    out_ += value;
    out_ += '\n';
  }
  void One(std::string_view name, std::string_view type, std::string_view help,
           const std::string& value) {
    Family(name, type, help);
    Sample(name, "", value);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

void WriteEngine(const Stats& engine, Page& page) {
#define LARDER_PROM_GAUGE(name, doc) page.One("larder_" #name, "gauge", doc, Number(engine.name));
  LARDER_STAT_GAUGES(LARDER_PROM_GAUGE)
#undef LARDER_PROM_GAUGE
#define LARDER_PROM_COUNTER(name, doc) \
  page.One("larder_" #name "_total", "counter", doc, Number(engine.name));
  LARDER_STAT_COUNTERS(LARDER_PROM_COUNTER)
#undef LARDER_PROM_COUNTER
}

void WriteServer(Core& core, Page& page) {
  auto counter = [&](std::string_view stat, std::string_view doc, uint64_t value) {
    if (stat.starts_with("total_")) stat.remove_prefix(6);
    page.One("larder_" + std::string(stat) + "_total", "counter", doc, Number(value));
  };
#define LARDER_PROM_SERVER_COUNTER(name, doc) counter(#name, doc, core.stats.name.load());
  LARDER_SERVER_STATS(LARDER_PROM_SERVER_COUNTER)
#undef LARDER_PROM_SERVER_COUNTER
  page.One("larder_connected_clients", "gauge", "clients connected",
           Number(static_cast<uint64_t>(core.clients ? core.clients->Count() : 0)));
  page.One("larder_pubsub_channels", "gauge", "Pub/Sub channels with a subscriber",
           Number(static_cast<uint64_t>(core.pubsub.NumChannels())));
  page.One("larder_pubsub_patterns", "gauge", "Pub/Sub patterns subscribed to",
           Number(static_cast<uint64_t>(core.pubsub.NumPat())));
  page.One("larder_uptime_seconds", "gauge", "seconds since the server started",
           Number(static_cast<uint64_t>((core.NowMs() - core.process.start_ms) / 1000)));
  const ResidentMemory rss = ReadResidentMemory();
  page.One("larder_resident_memory_bytes", "gauge",
           "resident set size of the server process, the value files' mapped pages included",
           Number(rss.total));
  page.One("larder_used_memory_bytes", "gauge",
           "resident memory of the server's own (INFO used_memory): not file-backed",
           Number(rss.own()));
  const CpuTime cpu = CpuTimeOf(RUSAGE_SELF);
  page.Family("larder_cpu_seconds_total", "counter", "CPU time of the server process");
  page.Sample("larder_cpu_seconds_total", "mode=\"user\"", Number(CpuTime::Seconds(cpu.user)));
  page.Sample("larder_cpu_seconds_total", "mode=\"system\"", Number(CpuTime::Seconds(cpu.system)));
  page.Family("larder_errors_total", "counter", "error replies by code (INFO errorstats)");
  for (const auto& [code, count] : core.errors.Snapshot()) {
    page.Sample("larder_errors_total", "code=\"" + Escaped(code, /*quotes=*/true) + "\"",
                Number(count));
  }
  page.Family("larder_build_info", "gauge", "the server's version, as a label; always 1");
  page.Sample("larder_build_info", "version=\"" LARDER_VERSION "\"", "1");
}

// The buckets' upper bounds: 2^k microseconds, 16 us to 16.8 s.
constexpr int kFirstPower = 4, kLastPower = 24;

void WriteHistogram(std::string_view cmd, const LatencyHistogram& h, Page& page) {
  const std::string label = "cmd=\"" + std::string(cmd) + "\"";
  std::vector<uint64_t> bounds;
  for (int k = kFirstPower; k <= kLastPower; ++k) bounds.push_back(uint64_t{1} << k);
  // The cumulative counts agree with each other and with _count.
  const LatencyHistogram::Cumulative cdf = h.CountsBelow(bounds);
  const uint64_t total = cdf.total;
  constexpr std::string_view name = "larder_command_duration_seconds_bucket";
  for (size_t i = 0; i < bounds.size(); ++i) {
    char le[32];
    std::snprintf(le, sizeof(le), "%.6f", static_cast<double>(bounds[i]) / 1e6);
    page.Sample(name, label + ",le=\"" + le + "\"", Number(cdf.below[i]));
  }
  page.Sample(name, label + ",le=\"+Inf\"", Number(total));
  page.Sample("larder_command_duration_seconds_sum", label,
              Number(static_cast<double>(h.sum_usec()) / 1e6));
  page.Sample("larder_command_duration_seconds_count", label, Number(total));
}

void WriteCommands(Core& core, Page& page) {
  const CommandStatsTable& table = core.commands;
  struct CounterFamily {
    std::string_view name, help;
    const std::atomic<uint64_t> CommandStats::*field;
  };
  constexpr CounterFamily kCounters[] = {
      {"larder_command_calls_total", "commands executed", &CommandStats::calls},
      {"larder_command_failed_calls_total", "commands that replied an error",
       &CommandStats::failed_calls},
      {"larder_command_rejected_calls_total",
       "commands refused before running (arity, authentication, context)",
       &CommandStats::rejected_calls},
  };
  auto called = [&](size_t id) {
    const CommandStats& s = table.at(id);
    return s.calls.load() + s.failed_calls.load() + s.rejected_calls.load() > 0;
  };
  for (const CounterFamily& f : kCounters) {
    page.Family(f.name, "counter", f.help);
    for (size_t id = 0; id < table.size(); ++id) {
      if (!called(id)) continue;
      page.Sample(f.name, "cmd=\"" + std::string(table.name(id)) + "\"",
                  Number((table.at(id).*f.field).load()));
    }
  }
  page.Family("larder_command_duration_seconds", "histogram",
              "time commands took to execute (latency-tracking)");
  for (size_t id = 0; id < table.size(); ++id) {
    if (table.at(id).latency.count() > 0)
      WriteHistogram(table.name(id), table.at(id).latency, page);
  }
}

}  // namespace

std::string PrometheusText(Core& core) {
  Page page;
  WriteEngine(core.store.GetStats(), page);
  WriteServer(core, page);
  WriteCommands(core, page);
  return page.Take();
}

}  // namespace larder::server
