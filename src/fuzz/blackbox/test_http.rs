//! Reading one HTTP/1.1 request off a socket, for the unit tests' loopback
//! servers (the wire's refusal tests and the re-run's fake target).

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// What reading a request gave.
pub enum Read {
    /// A whole request: its head (as sent) and its Content-Length body.
    Request { head: String, body: Vec<u8> },
    /// The head passed `head_limit` bytes, or the client closed first.
    NoHead,
    /// The client closed before the whole body came.
    Truncated,
}

/// Reads one request from `c`; a head longer than `head_limit` is not read on.
pub async fn read_request(c: &mut TcpStream, head_limit: usize) -> Read {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        match c.read(&mut chunk).await {
            Ok(0) | Err(_) => return Read::NoHead,
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
        }
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > head_limit {
            return Read::NoHead;
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let len: usize = head
        .to_ascii_lowercase()
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < end + len {
        match c.read(&mut chunk).await {
            Ok(0) | Err(_) => return Read::Truncated,
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
        }
    }
    Read::Request {
        head,
        body: buf[end..end + len].to_vec(),
    }
}
