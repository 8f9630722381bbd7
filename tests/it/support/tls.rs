//! `https` targets for the tests: a private CA and leaf certificates made
//! with `openssl` in a temp dir ([`Pki`]), and nginx terminating TLS on
//! 127.0.0.1 in front of one `elicitkit serve` ([`TlsFront`]), one port per
//! certificate, so each certificate failure has a port of its own.

use super::cluster::{Nginx, free_port};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A private CA and the certificates it signed, in a temp dir.
pub struct Pki {
    pub dir: tempfile::TempDir,
    /// The CA's certificate (PEM).
    pub ca: PathBuf,
    ca_key: PathBuf,
}

/// A certificate and its key (PEM files).
#[derive(Clone)]
pub struct Cert {
    pub cert: PathBuf,
    pub key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    super::need::need("openssl");
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Pki {
    /// A new CA (`CN=elicitkit test CA`, a CA certificate).
    pub fn new() -> Pki {
        let dir = tempfile::tempdir().expect("tempdir");
        openssl(
            dir.path(),
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "2",
                "-subj",
                "/CN=elicitkit test CA",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign",
            ],
        );
        Pki {
            ca: dir.path().join("ca.pem"),
            ca_key: dir.path().join("ca.key"),
            dir,
        }
    }

    /// The CA's own certificate and key, to serve as if it were a leaf
    /// (what a self-signed certificate made the quick way is).
    pub fn ca_as_leaf(&self) -> Cert {
        Cert {
            cert: self.ca.clone(),
            key: self.ca_key.clone(),
        }
    }

    /// A leaf `name`, valid for `san` (e.g. `IP:127.0.0.1,DNS:localhost`),
    /// signed by the CA; `expired`: valid for one day in 2020.
    pub fn leaf(&self, name: &str, san: &str, expired: bool) -> Cert {
        let d = self.dir.path();
        let (key, csr, pem) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.pem"),
        );
        openssl(
            d,
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                &key,
                "-out",
                &csr,
                "-subj",
                &format!("/CN={name}"),
            ],
        );
        let ext = format!("{name}.ext");
        std::fs::write(
            d.join(&ext),
            format!(
                "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n\
                 extendedKeyUsage=serverAuth\nsubjectAltName={san}\n"
            ),
        )
        .expect("write ext");
        if expired {
            // `openssl ca` takes explicit dates (`x509 -req` in 3.0 does not).
            std::fs::write(d.join("index.txt"), "").expect("index");
            std::fs::write(d.join("serial"), "1000\n").expect("serial");
            std::fs::write(
                d.join("ca.cnf"),
                "[ca]\ndefault_ca=test\n[test]\ndatabase=index.txt\nserial=serial\n\
                 new_certs_dir=.\ndefault_md=sha256\npolicy=any\nunique_subject=no\n\
                 [any]\ncommonName=supplied\n",
            )
            .expect("ca.cnf");
            openssl(
                d,
                &[
                    "ca",
                    "-batch",
                    "-config",
                    "ca.cnf",
                    "-cert",
                    "ca.pem",
                    "-keyfile",
                    "ca.key",
                    "-in",
                    &csr,
                    "-out",
                    &pem,
                    "-extfile",
                    &ext,
                    "-startdate",
                    "20200101000000Z",
                    "-enddate",
                    "20200102000000Z",
                    "-notext",
                ],
            );
        } else {
            openssl(
                d,
                &[
                    "x509",
                    "-req",
                    "-in",
                    &csr,
                    "-CA",
                    "ca.pem",
                    "-CAkey",
                    "ca.key",
                    "-CAcreateserial",
                    "-out",
                    &pem,
                    "-days",
                    "2",
                    "-extfile",
                    &ext,
                ],
            );
        }
        Cert {
            cert: d.join(pem),
            key: d.join(key),
        }
    }
}

/// nginx terminating TLS in front of `upstream` (`IP:PORT`), one port per
/// certificate, plus one port that proxies in plain http. A client
/// connection serves 50 requests, then nginx closes it: a short run opens
/// (and resumes) TLS sessions inside its window, not only at its start.
pub struct TlsFront {
    pub nginx: Nginx,
    /// The TLS port of each certificate, in the order given.
    pub tls_ports: Vec<u16>,
    /// A plain-http port to the same upstream.
    pub plain_port: u16,
}

impl TlsFront {
    pub fn start(upstream: &str, certs: &[Cert]) -> TlsFront {
        let tls_ports: Vec<u16> = certs.iter().map(|_| free_port()).collect();
        let plain_port = free_port();
        let servers: String = certs
            .iter()
            .zip(&tls_ports)
            .map(|(c, port)| {
                format!(
                    "    server {{\n        listen 127.0.0.1:{port} ssl;\n        \
                     ssl_certificate {};\n        ssl_certificate_key {};\n        \
                     location / {{ include proxy.conf; }}\n    }}\n",
                    c.cert.display(),
                    c.key.display()
                )
            })
            .collect();
        let nginx = Nginx::with_conf(plain_port, |prefix| {
            let proxy = format!(
                "proxy_pass http://{upstream};\nproxy_http_version 1.1;\n\
                 proxy_set_header Connection \"\";\nproxy_set_header Host $http_host;\n\
                 proxy_buffering off;\nproxy_read_timeout 60s;\n"
            );
            std::fs::write(Path::new(prefix).join("proxy.conf"), proxy).expect("proxy.conf");
            format!(
                "daemon off;\nworker_processes 1;\npid {prefix}/nginx.pid;\n\
                 error_log {prefix}/error.log warn;\nevents {{ worker_connections 1024; }}\n\
                 http {{\n    access_log off;\n    client_body_temp_path {prefix}/client_body;\n    \
                 proxy_temp_path {prefix}/proxy;\n    fastcgi_temp_path {prefix}/fastcgi;\n    \
                 uwsgi_temp_path {prefix}/uwsgi;\n    scgi_temp_path {prefix}/scgi;\n    \
                 keepalive_requests 50;\n\
                 {servers}    server {{\n        listen 127.0.0.1:{plain_port};\n        \
                 location / {{ include proxy.conf; }}\n    }}\n}}\n"
            )
        });
        // The TLS ports were configured with the plain one: up together.
        TlsFront {
            nginx,
            tls_ports,
            plain_port,
        }
    }

    /// `https://127.0.0.1:PORT/mcp` of the `i`-th certificate's port.
    pub fn https(&self, i: usize) -> String {
        format!("https://127.0.0.1:{}/mcp", self.tls_ports[i])
    }

    /// `--allowed-host` values `serve` needs behind this front.
    pub fn hosts(&self) -> Vec<String> {
        self.tls_ports
            .iter()
            .chain([&self.plain_port])
            .map(|p| format!("127.0.0.1:{p}"))
            .collect()
    }
}
