#include "net/tls_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "common/text.h"

namespace larder::server {
namespace {

// OpenSSL's reason for the failure just seen: the first entry of its error queue, which Asio
// already took into `ec` if the call went through Asio (the queue is emptied either way);
// else `ec`'s message.
std::string OpenSslReason(const asio::error_code& ec) {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (ec && ec.category() == asio::error::get_ssl_category()) {
    e = static_cast<unsigned long>(ec.value());
  }
  const char* reason = e != 0 ? ERR_reason_error_string(e) : nullptr;
  if (reason != nullptr) return reason;
  return ec ? ec.message() : "rejected by OpenSSL";
}

Status Refused(std::string_view option, std::string_view value, const std::string& reason) {
  return Status::InvalidArgument(std::string(option) + " '" + std::string(value) + "': " + reason);
}

// A file or directory the server cannot read is named with the system's words (OpenSSL would
// only say "system lib").
Status CheckReadable(std::string_view option, const std::string& path) {
  if (::access(path.c_str(), R_OK) != 0) return Refused(option, path, std::strerror(errno));
  return Status::OK();
}

// TLS versions from tls-protocols (validated by the option table: TLSv1.2 / TLSv1.3 words).
void SetProtocolRange(SSL_CTX* ctx, const std::string& protocols) {
  bool v12 = false, v13 = false;
  for (std::string_view word : common::SplitNonEmpty(protocols, ' ')) {
    v12 |= common::EqualsNoCase(word, "TLSv1.2");
    v13 |= common::EqualsNoCase(word, "TLSv1.3");
  }
  if (!v12 && !v13) v12 = v13 = true;  // "" (no words): both
  SSL_CTX_set_min_proto_version(ctx, v12 ? TLS1_2_VERSION : TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(ctx, v13 ? TLS1_3_VERSION : TLS1_2_VERSION);
}

Status LoadIdentity(TlsContext& ctx, const config::ServerConfig& cfg) {
  if (cfg.tls_cert_file.empty() || cfg.tls_key_file.empty()) {
    return Status::InvalidArgument("tls-port " + std::to_string(cfg.tls_port) +
                                   " needs tls-cert-file and tls-key-file");
  }
  for (Status st : {CheckReadable("tls-cert-file", cfg.tls_cert_file),
                    CheckReadable("tls-key-file", cfg.tls_key_file)}) {
    if (!st.ok()) return st;
  }
  asio::error_code ec;
  // An encrypted key is opened with tls-key-file-pass; without one OpenSSL would ask on the
  // terminal, and wait.
  ctx.set_password_callback(
      [pass = cfg.tls_key_file_pass](size_t, TlsContext::password_purpose) { return pass; }, ec);
  ctx.use_certificate_chain_file(cfg.tls_cert_file, ec);
  if (ec) return Refused("tls-cert-file", cfg.tls_cert_file, OpenSslReason(ec));
  // Loaded after the certificate, the key is checked against it ("key values mismatch").
  ctx.use_private_key_file(cfg.tls_key_file, TlsContext::pem, ec);
  if (ec) return Refused("tls-key-file", cfg.tls_key_file, OpenSslReason(ec));
  return Status::OK();
}

Status LoadClientAuthority(TlsContext& ctx, const config::ServerConfig& cfg) {
  const bool required = cfg.tls_auth_clients == "yes";
  if (cfg.tls_auth_clients == "no") {
    ctx.set_verify_mode(asio::ssl::verify_none);
    return Status::OK();
  }
  if (cfg.tls_ca_cert_file.empty() && cfg.tls_ca_cert_dir.empty()) {
    return Status::InvalidArgument("tls-auth-clients " + cfg.tls_auth_clients +
                                   " needs tls-ca-cert-file or tls-ca-cert-dir");
  }
  asio::error_code ec;
  if (!cfg.tls_ca_cert_file.empty()) {
    if (Status st = CheckReadable("tls-ca-cert-file", cfg.tls_ca_cert_file); !st.ok()) return st;
    ctx.load_verify_file(cfg.tls_ca_cert_file, ec);
    if (ec) return Refused("tls-ca-cert-file", cfg.tls_ca_cert_file, OpenSslReason(ec));
  }
  if (!cfg.tls_ca_cert_dir.empty()) {
    if (Status st = CheckReadable("tls-ca-cert-dir", cfg.tls_ca_cert_dir); !st.ok()) return st;
    ctx.add_verify_path(cfg.tls_ca_cert_dir, ec);
    if (ec) return Refused("tls-ca-cert-dir", cfg.tls_ca_cert_dir, OpenSslReason(ec));
  }
  ctx.set_verify_mode(asio::ssl::verify_peer |
                      (required ? asio::ssl::verify_fail_if_no_peer_cert : 0));
  return Status::OK();
}

Status SetCiphers(TlsContext& ctx, const config::ServerConfig& cfg) {
  SSL_CTX* native = ctx.native_handle();
  if (!cfg.tls_ciphers.empty() && SSL_CTX_set_cipher_list(native, cfg.tls_ciphers.c_str()) != 1) {
    return Refused("tls-ciphers", cfg.tls_ciphers, OpenSslReason({}));
  }
  if (!cfg.tls_ciphersuites.empty() &&
      SSL_CTX_set_ciphersuites(native, cfg.tls_ciphersuites.c_str()) != 1) {
    return Refused("tls-ciphersuites", cfg.tls_ciphersuites, OpenSslReason({}));
  }
  if (cfg.tls_prefer_server_ciphers) SSL_CTX_set_options(native, SSL_OP_CIPHER_SERVER_PREFERENCE);
  return Status::OK();
}

// tls-dh-params-file's parameters for the DHE ciphers of TLSv1.2; without it OpenSSL picks a
// built-in group matching the certificate's strength, as Redis 7 has it do on OpenSSL 3.
Status LoadDhParams(SSL_CTX* native, const config::ServerConfig& cfg) {
  if (cfg.tls_dh_params_file.empty()) {
    SSL_CTX_set_dh_auto(native, 1);
    return Status::OK();
  }
  const std::string& file = cfg.tls_dh_params_file;
  if (Status st = CheckReadable("tls-dh-params-file", file); !st.ok()) return st;
  BIO* bio = BIO_new_file(file.c_str(), "r");
  EVP_PKEY* params = bio != nullptr ? PEM_read_bio_Parameters(bio, nullptr) : nullptr;
  BIO_free(bio);
  if (params == nullptr || EVP_PKEY_get_base_id(params) != EVP_PKEY_DH) {
    EVP_PKEY_free(params);
    ERR_clear_error();
    return Refused("tls-dh-params-file", file, "no PEM Diffie-Hellman parameters in it");
  }
  if (SSL_CTX_set0_tmp_dh_pkey(native, params) != 1) {  // takes params only on success
    EVP_PKEY_free(params);
    return Refused("tls-dh-params-file", file, OpenSslReason({}));
  }
  return Status::OK();
}

// tls-session-caching and its size and timeout, as Redis sets them. Off, no session resumes:
// no cache and no tickets either (a client offering a session gets a full handshake, where
// Redis 7.0 fails its handshake).
void SetSessionCache(SSL_CTX* native, const config::ServerConfig& cfg) {
  if (!cfg.tls_session_caching) {
    SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(native, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(native, 0);
    return;
  }
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_SERVER);
  SSL_CTX_sess_set_cache_size(native, cfg.tls_session_cache_size);
  SSL_CTX_set_timeout(native, cfg.tls_session_cache_timeout);
}

}  // namespace

Result<std::shared_ptr<TlsContext>> BuildTlsContext(const config::ServerConfig& cfg) {
  ERR_clear_error();
  auto ctx = std::make_shared<TlsContext>(TlsContext::tls_server);
  // No renegotiation, no compression (CRIME), a fresh key share per handshake.
  ctx->set_options(TlsContext::default_workarounds | TlsContext::no_compression |
                   TlsContext::single_dh_use);
  SSL_CTX_set_options(ctx->native_handle(), SSL_OP_NO_RENEGOTIATION);
  // Replies are written from a buffer that moves as output is consumed.
  SSL_CTX_set_mode(ctx->native_handle(), SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // A client resuming a session after it sent a certificate needs a session id context, or
  // OpenSSL fails its handshake.
  static constexpr unsigned char kSessionContext[] = "larder";
  SSL_CTX_set_session_id_context(ctx->native_handle(), kSessionContext,
                                 sizeof(kSessionContext) - 1);
  SetProtocolRange(ctx->native_handle(), cfg.tls_protocols);
  SetSessionCache(ctx->native_handle(), cfg);
  Status st = LoadIdentity(*ctx, cfg);
  if (st.ok()) st = LoadClientAuthority(*ctx, cfg);
  if (st.ok()) st = SetCiphers(*ctx, cfg);
  if (st.ok()) st = LoadDhParams(ctx->native_handle(), cfg);
  if (!st.ok()) return st;
  return ctx;
}

}  // namespace larder::server
