"""Certificates for TLS tests and benchmarks, made with the openssl program: a private CA
("ca"), a second CA that signs nothing the server trusts ("other-ca"), two server certificates
for localhost / 127.0.0.1 ("server", "server2"), a client certificate from the CA ("client")
and one from the other CA ("stranger"), EC P-256 keys; an RSA server certificate
("server-rsa"), "server"'s key encrypted ("server-enc.key", passphrase "larder pass") and DH
parameters ("dh.pem"). Valid two days."""
import os
import shutil
import subprocess
import tempfile


class TestPki:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="larder_tls_")
        try:
            self._ca("ca")
            self._ca("other-ca")
            for server in ("server", "server2"):
                self._cert(server, "ca", san="DNS:localhost,IP:127.0.0.1")
            self._cert("client", "ca")
            self._cert("stranger", "other-ca")
            # for TLSv1.2's DHE ciphers, which sign with RSA
            self._cert("server-rsa", "ca", san="DNS:localhost,IP:127.0.0.1", key="rsa:2048")
            # "server"'s key, encrypted with the passphrase "larder pass"
            self._openssl("pkey", "-in", "server.key", "-aes256", "-passout",
                          "pass:larder pass", "-out", "server-enc.key")
            # Diffie-Hellman parameters: a named group, so nothing is generated
            self._openssl("genpkey", "-genparam", "-algorithm", "DH", "-pkeyopt",
                          "group:ffdhe2048", "-out", "dh.pem")
        except BaseException:
            self.cleanup()
            raise

    def path(self, name):
        """The file `name` (e.g. "server.crt", "client.key") in the PKI's directory."""
        return os.path.join(self.dir, name)

    def server_options(self, port, auth_clients="yes"):
        """The tls-* options larder-server and redis-server share, serving "server"."""
        return ["--tls-port", str(port), "--tls-cert-file", self.path("server.crt"),
                "--tls-key-file", self.path("server.key"), "--tls-ca-cert-file",
                self.path("ca.crt"), "--tls-auth-clients", auth_clients]

    def client_options(self):
        """redis-cli's and redis-benchmark's TLS options, with the "client" certificate."""
        return ["--tls", "--cacert", self.path("ca.crt"), "--cert", self.path("client.crt"),
                "--key", self.path("client.key")]

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def _openssl(self, *args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=self.dir)

    def _ca(self, name):
        self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt",
                      "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj",
                      f"/CN={name}", "-keyout", f"{name}.key", "-out", f"{name}.crt")

    def _cert(self, name, ca, san=None, key="ec"):
        key_args = ["-pkeyopt", "ec_paramgen_curve:prime256v1"] if key == "ec" else []
        self._openssl("req", "-newkey", key, *key_args, "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key", "-out",
                      f"{name}.csr")
        ext = []
        if san:
            with open(self.path(f"{name}.ext"), "w") as f:
                f.write(f"subjectAltName={san}\n")
            ext = ["-extfile", f"{name}.ext"]
        self._openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey",
                      f"{ca}.key", "-CAcreateserial", "-days", "2", "-out", f"{name}.crt", *ext)
