// The TLS side of the client port: an OpenSSL context (through Asio's ssl support) built from
// the tls-* options, with redis.conf's meanings:
//   tls-cert-file / tls-key-file   the certificate chain and key the server presents (both
//                                  required; the key must match the certificate)
//   tls-ca-cert-file / -dir        the CAs client certificates must chain to (required unless
//                                  tls-auth-clients is no)
//   tls-auth-clients               yes: a client without a valid certificate fails the
//                                  handshake; optional: one that sends a certificate must send
//                                  a valid one; no: none is asked for
//   tls-protocols                  TLSv1.2 and/or TLSv1.3 (both when empty)
//   tls-ciphers / -ciphersuites    OpenSSL cipher strings for TLSv1.2 / TLSv1.3
//   tls-prefer-server-ciphers      the server's order wins
// Connections hold the context they were accepted with (a shared_ptr), so a context rebuilt
// by CONFIG SET applies to new connections only, as in Redis.
#pragma once

#include <asio/ssl.hpp>
#include <memory>
#include <string>

#include "config/server_config.h"
#include "larder/status.h"

namespace larder::server {

using TlsContext = asio::ssl::context;

// A context built from `cfg`, or InvalidArgument naming the option, its value and OpenSSL's
// words, e.g. "tls-cert-file '/etc/larder/x.crt': system library (No such file or directory)".
Result<std::shared_ptr<TlsContext>> BuildTlsContext(const config::ServerConfig& cfg);

}  // namespace larder::server
