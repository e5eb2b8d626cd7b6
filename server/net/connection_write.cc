// Connection's write path: replies appended to the output queue, written by the io thread
// (sendmsg, sendfile from a value's file, or staged through TLS) or by a pool job (WriteNow),
// and the output buffer limits.
#include <sys/sendfile.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "log.h"
#include "net/connection.h"
#include "net/server.h"

namespace larder::server {

ssize_t Connection::SendSome(int fd, const resp::OutputQueue& q) {
  int file_fd;
  uint64_t offset;
  size_t n;
  if (q.FrontFile(&file_fd, &offset, &n)) {
    // The page-cache pages go to the socket by reference (the descriptor is non-blocking).
    off_t off = static_cast<off_t>(offset);
    return ::sendfile(fd, file_fd, &off, std::min<size_t>(n, kMaxSendfileBytes));
  }
  struct iovec iov[kMaxIov];
  struct msghdr msg = {};
  msg.msg_iov = iov;
  msg.msg_iovlen = q.FillIov(iov, kMaxIov);
  return ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void Connection::WriteNow(int fd, resp::OutputQueue& q) {
  size_t written = 0;
  while (!q.empty()) {
    ssize_t n = SendSome(fd, q);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // full socket buffer or an error: the io thread's write handles it
    q.Consume(static_cast<size_t>(n));
    written += static_cast<size_t>(n);
  }
  NoteTransferred(server_.core().stats.total_net_output_bytes, written);
}

void Connection::NoteTransferred(std::atomic<uint64_t>& counter, size_t n) {
  ServerStats::Count(counter, n);
  if (n > 0) state_->last_active_ms = server_.core().NowMs();
}

const config::ClientOutputBufferLimit& Connection::OutputLimit() {
  return state_->subscribed() ? Cfg().client_output_buffer_limit_pubsub
                              : Cfg().client_output_buffer_limit;
}

void Connection::AfterCommand() {
  if (closed_) return;
  if (state_->close_after_reply) close_after_write_ = true;
  if (OverHardLimit(0)) CloseForOutputLimit("reached the output buffer limit");
}

bool Connection::OverHardLimit(uint64_t held) {
  const uint64_t hard = OutputLimit().hard_bytes;
  return hard > 0 && pending_out_ + held > hard;
}

void Connection::CloseForOutputLimit(const char* why) {
  Log(LogLevel::kNotice, "closing client id=" + std::to_string(state_->id) + " that " + why);
  ServerStats::Count(server_.core().stats.client_output_buffer_limit_disconnections);
  CloseNow();
}

void Connection::AppendOutput(resp::OutputQueue& q) {
  size_t n = q.bytes();
  if (n == 0) return;
  if (n < kCopyReplyBytes && !out_.empty() && !q.has_files()) {
    // Copy small replies into the tail block (appending while a write is in flight is
    // allowed); the source keeps any external bytes alive until copied.
    struct iovec iov[16];
    size_t done = 0;
    while (done < n) {
      size_t k = q.FillIov(iov, 16);
      size_t got = 0;
      for (size_t i = 0; i < k; ++i) {
        out_.back().Append({static_cast<const char*>(iov[i].iov_base), iov[i].iov_len});
        got += iov[i].iov_len;
      }
      q.Consume(got);
      done += got;
    }
  } else {
    out_.push_back(std::move(q));
    q = resp::OutputQueue();
  }
  pending_out_ += n;
  state_->output_bytes = pending_out_;
}

void Connection::StartWrite() {
  if (writing_ || closed_) return;
  if (pending_out_ == 0) {
    if (close_after_write_) CloseNow();
    return;
  }
  while (!out_.empty() && out_.front().empty() && out_.size() > 1) out_.pop_front();
  if (tls_) return StartTlsWrite();
  if (out_.front().has_files()) {
    // sendfile when the socket can take more; file segments mixed with memory ones are sent in
    // order by SendSome.
    writing_ = true;
    socket_.async_wait(
        asio::socket_base::wait_write, [self = shared_from_this()](const asio::error_code& ec) {
          ssize_t n = 0;
          if (!ec) {
            n = self->SendSome(self->socket_.native_handle(), self->out_.front());
          }
          if (ec || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            self->OnWrite(ec ? ec : asio::error_code(errno, asio::system_category()), 0);
            return;
          }
          self->OnWrite({}, n > 0 ? static_cast<size_t>(n) : 0);
        });
    return;
  }
  size_t n = 0;
  for (const resp::OutputQueue& q : out_) {
    n += q.FillIov(iov_ + n, kMaxIov - n);
    if (n == kMaxIov || q.has_files()) break;  // a file segment is sent before what follows
  }
  bufs_.clear();
  for (size_t i = 0; i < n; ++i) bufs_.emplace_back(iov_[i].iov_base, iov_[i].iov_len);
  writing_ = true;
  socket_.async_write_some(bufs_,
                           [self = shared_from_this()](const asio::error_code& ec, size_t written) {
                             self->OnWrite(ec, written);
                           });
}

void Connection::StartTlsWrite() {
  if (!tls_stage_) tls_stage_ = std::make_unique<char[]>(kTlsStageBytes);
  size_t staged = 0;
  for (const resp::OutputQueue& q : out_) {
    if (staged == kTlsStageBytes) break;
    ssize_t n = q.CopyOut(tls_stage_.get() + staged, kTlsStageBytes - staged);
    if (n < 0) {
      // The value passed its checksum, but its file cannot be read again: send nothing more.
      Log(LogLevel::kWarning, "closing client id=" + std::to_string(state_->id) +
                                  ": reading a reply's value file failed: " + std::strerror(errno));
      CloseNow(Close::kCut);
      return;
    }
    staged += static_cast<size_t>(n);
  }
  writing_ = true;
  asio::async_write(*tls_, asio::buffer(tls_stage_.get(), staged),
                    [self = shared_from_this()](const asio::error_code& ec, size_t written) {
                      self->OnWrite(ec, written);
                    });
}

void Connection::OnWrite(const asio::error_code& ec, size_t n) {
  writing_ = false;
  if (closed_) return;
  if (ec) {
    CloseNow(Close::kCut);
    return;
  }
  NoteTransferred(server_.core().stats.total_net_output_bytes, n);  // a reply read is activity
  pending_out_ -= n;
  state_->output_bytes = pending_out_;
  while (n > 0) {
    size_t take = std::min(n, out_.front().bytes());
    out_.front().Consume(take);
    n -= take;
    if (out_.front().empty() && out_.size() > 1) out_.pop_front();
  }
  if (out_.size() == 1 && out_.front().empty()) {
    out_.front().ReleaseSpare();
    tls_stage_.reset();
  }
  Process();
}

}  // namespace larder::server
