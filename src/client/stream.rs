//! The byte stream under an [`super::h1::H1Lane`]: a TCP connection, plain
//! or under TLS, as one type hyper drives; [`open`] connects it and says
//! how long the TCP connect and the TLS handshake took (the first two
//! phases of a leg that opened a connection).

use super::outcome::Opened;
use rustls::pki_types::ServerName;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// A connection to the target.
#[derive(Debug)]
pub enum Stream {
    /// `http`.
    Plain(TcpStream),
    /// `https` (boxed: the TLS state is large and the plain case common).
    Tls(Box<TlsStream<TcpStream>>),
}

/// How to wrap a new connection.
#[derive(Clone)]
pub struct Tls {
    connector: TlsConnector,
    name: ServerName<'static>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("name", &self.name).finish()
    }
}

impl Tls {
    /// TLS to `host` with the process's shared trust
    /// ([`super::tls::shared`]); `None` when `host` is no server name.
    pub fn to(host: &str) -> Option<Tls> {
        // A bracketed IPv6 literal, as URLs write it, is an IP address.
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(bare.to_owned()).ok()?;
        Some(Tls {
            connector: TlsConnector::from(super::tls::shared()),
            name,
        })
    }
}

/// Why a connection could not be opened; it reads as callers show it.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// TCP did not connect.
    #[error("cannot connect to {addr}: {source}")]
    Tcp {
        /// `HOST:PORT`.
        addr: String,
        /// The system's reason.
        source: io::Error,
    },
    /// The TLS handshake failed: what failed and how to fix it, when
    /// [`super::tls::explain`] knows.
    #[error("{}", .explained.clone().unwrap_or_else(|| format!("TLS handshake with {}: {}", .addr, .source)))]
    Tls {
        /// `HOST:PORT`.
        addr: String,
        /// The failure in words, with its fix.
        explained: Option<String>,
        /// The handshake's error.
        source: io::Error,
    },
}

/// Connects to `addr` (`HOST:PORT`), then, with `tls`, shakes hands.
pub async fn open(addr: &str, tls: Option<&Tls>) -> Result<(Stream, Opened), ConnectError> {
    let started = Instant::now();
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|source| ConnectError::Tcp {
            addr: addr.to_owned(),
            source,
        })?;
    // Small requests and replies: never wait for Nagle.
    let _ = tcp.set_nodelay(true);
    let connect = started.elapsed();
    let Some(tls) = tls else {
        return Ok((
            Stream::Plain(tcp),
            Opened {
                connect,
                tls: Duration::ZERO,
            },
        ));
    };
    let stream = tls
        .connector
        .connect(tls.name.clone(), tcp)
        .await
        .map_err(|source| ConnectError::Tls {
            addr: addr.to_owned(),
            explained: super::tls::explain(&source),
            source,
        })?;
    let opened = Opened {
        connect,
        tls: started.elapsed() - connect,
    };
    Ok((Stream::Tls(Box::new(stream)), opened))
}

impl Stream {
    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<std::net::SocketAddr> {
        match self {
            Stream::Plain(s) => s.peer_addr(),
            Stream::Tls(s) => s.get_ref().0.peer_addr(),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_are_host_names_or_ip_addresses() {
        assert!(Tls::to("example.test").is_some());
        assert!(Tls::to("127.0.0.1").is_some());
        assert!(Tls::to("[::1]").is_some());
        assert!(Tls::to("not a name").is_none());
    }
}
