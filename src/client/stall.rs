//! What a tail stall is, for the load tool's diagnosis and the checker
//! alike: Nagle's algorithm holding the second piece of a reply (its body,
//! or a chunked terminator) until the client ACKs the first, and the client
//! delaying that ACK (about 40 ms on Linux, up to 200 ms elsewhere). A gap
//! in [`STALL_MIN`, `STALL_MAX`] between a reply's head, first body byte and
//! end counts as a stall; a pattern of them (see [`is_pattern`]) is worth
//! naming, one slow reply is not.

use std::time::Duration;

/// A gap at least this long counts as a stall.
pub const STALL_MIN: Duration = Duration::from_millis(30);
/// A gap longer than this is slowness of another kind.
pub const STALL_MAX: Duration = Duration::from_millis(220);
/// Fewest stalled replies that make a pattern.
pub const MIN_STALLS: u64 = 3;
/// Smallest share of replies that must stall.
pub const MIN_SHARE: f64 = 0.05;

/// Whether one gap is a stall.
pub fn is_stall(gap: Duration) -> bool {
    (STALL_MIN..=STALL_MAX).contains(&gap)
}

/// Whether `stalled` of `replies` is a pattern worth naming.
pub fn is_pattern(stalled: u64, replies: u64) -> bool {
    replies > 0 && stalled >= MIN_STALLS && stalled as f64 / replies as f64 >= MIN_SHARE
}

/// The advice both tools give.
pub const ADVICE: &str = "responses stall in their tail: TCP_NODELAY is probably off on the \
server (Nagle + delayed ACK); set TCP_NODELAY on accepted sockets, or write each reply in one piece";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stalls_and_patterns() {
        assert!(is_stall(Duration::from_millis(40)));
        assert!(!is_stall(Duration::from_millis(5)));
        assert!(!is_stall(Duration::from_millis(400)));
        assert!(is_pattern(5, 100));
        assert!(!is_pattern(2, 10), "too few stalls");
        assert!(!is_pattern(4, 100), "too small a share");
        assert!(!is_pattern(0, 0));
    }
}
