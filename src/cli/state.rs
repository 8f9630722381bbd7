//! `elicitkit state`: choose and debug `requestState` sealing.
//!
//! - `state bench [--quick]`: measure every codec on this machine and print
//!   a table (token size, seal/open ns, confidentiality, nonce-misuse
//!   resistance, a one-line recommendation).
//! - `state inspect TOKEN [--key-file F | --key-env VAR]`: decode the
//!   envelope, show version, key id, algorithm and the claims where visible;
//!   with a key, say whether it opens and, if not, why.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, UNIX_EPOCH};

use clap::{Args as ClapArgs, Subcommand};

use super::{exit, usage_error};
use crate::state::claims::{self, ClaimsRef};
use crate::state::envelope::{self, HEADER_LEN, Header};
use crate::state::measure::{self, Measurement};
use crate::state::{Binding, CodecName, KeyRing, Sealer, SealerConfig, StateError};

/// Arguments of `elicitkit state`.
#[derive(Debug, ClapArgs)]
#[command(
    about = "Choose and debug requestState sealing (benchmark codecs, inspect tokens)",
    after_help = "Examples:
  elicitkit state bench --quick                      # which codec is fastest here
  elicitkit state bench --payload 1024
  elicitkit state inspect eyJ...                     # decode a token's envelope
  elicitkit state inspect TOKEN --key-file keys.txt --principal alice

Exit codes: 0 done (inspect: the token decodes, and opens with a key); 1 it does not;
2 usage error."
)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub command: StateCommand,
}

/// `elicitkit state` subcommands.
#[derive(Debug, Subcommand)]
pub enum StateCommand {
    /// Measure every codec on this machine and recommend one.
    Bench(BenchArgs),
    /// Decode a requestState token and, with a key, say whether it opens.
    Inspect(InspectArgs),
}

/// Arguments of `elicitkit state bench`.
#[derive(Debug, ClapArgs)]
pub struct BenchArgs {
    /// About one second in total instead of about five.
    #[arg(long)]
    pub quick: bool,
    /// Payload bytes in the measured state.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(0..=65536))]
    pub payload: u32,
}

/// Arguments of `elicitkit state inspect`.
#[derive(Debug, ClapArgs)]
#[command(
    long_about = "Decodes the envelope and prints version, key id and algorithm, and the claims \
when the codec does not encrypt them. With --key-file or --key-env (key ring format: one \
`kid:base64url(key)` per line, or one bare key), verifies the token and prints why it does not \
open. With --principal and --request-digest, checks the binding too.\n\n\
Exit status: 0 when the token decodes (and opens, when a key is given), 1 when it does not, \
2 on a usage error or unreadable key."
)]
pub struct InspectArgs {
    /// The requestState token.
    pub token: String,
    /// Key ring file.
    #[arg(long, value_name = "FILE", conflicts_with = "key_env")]
    pub key_file: Option<PathBuf>,
    /// Environment variable holding the key ring.
    #[arg(long, value_name = "VAR")]
    pub key_env: Option<String>,
    /// Expected principal (checks the binding; needs a key).
    #[arg(long, requires = "request_digest")]
    pub principal: Option<String>,
    /// Expected request digest, 64 hex digits (needs --principal).
    #[arg(long, value_name = "HEX", requires = "principal")]
    pub request_digest: Option<String>,
}

/// Runs `elicitkit state`.
pub fn run(args: Args) -> ExitCode {
    match args.command {
        StateCommand::Bench(a) => bench(&a),
        StateCommand::Inspect(a) => inspect(&a),
    }
}

fn bench(args: &BenchArgs) -> ExitCode {
    let budget = if args.quick {
        Duration::from_millis(60)
    } else {
        Duration::from_millis(350)
    };
    let rows: Vec<Measurement> = CodecName::ALL
        .iter()
        .map(|c| measure::measure(*c, args.payload as usize, budget))
        .collect();
    print!("{}", render_bench(&rows, args.payload as usize));
    exit::ok()
}

/// Renders the `state bench` table.
pub fn render_bench(rows: &[Measurement], payload: usize) -> String {
    let fastest = |conf: bool| {
        rows.iter()
            .filter(|m| m.codec.confidential() == conf)
            .min_by(|a, b| a.open_ns.total_cmp(&b.open_ns))
            .map(|m| m.codec)
    };
    let (fast_mac, fast_aead) = (fastest(false), fastest(true));
    let mut out = format!(
        "requestState codecs on this machine ({payload}-byte payload; median of short batches, \
         noisy on a busy host)\n\n{:<19} {:>6} {:>8} {:>8}  {:<5} {:<7}  {}\n",
        "codec", "token", "seal ns", "open ns", "conf.", "misuse", "recommendation"
    );
    for m in rows {
        let star = if Some(m.codec) == fast_mac || Some(m.codec) == fast_aead {
            " [fastest open of its kind here]"
        } else {
            ""
        };
        out.push_str(&format!(
            "{:<19} {:>6} {:>8.0} {:>8.0}  {:<5} {:<7}  {}{}\n",
            m.codec.as_str(),
            m.token_len,
            m.seal_ns,
            m.open_ns,
            if m.codec.confidential() { "yes" } else { "no" },
            if m.codec.nonce_misuse_resistant() {
                "yes"
            } else {
                "no"
            },
            measure::recommendation(m.codec),
            star
        ));
    }
    out.push_str(
        "\ntoken = characters; conf. = claims hidden from the client; misuse = safe if a nonce repeats.\n\
         Rigorous numbers: cargo bench --bench state_codec\n",
    );
    out
}

fn fmt_ms(ms: u64, now: u64) -> String {
    let when = humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms));
    let rel = if ms >= now {
        format!(
            "in {}",
            humantime::format_duration(Duration::from_secs((ms - now) / 1000))
        )
    } else {
        format!(
            "{} ago",
            humantime::format_duration(Duration::from_secs((now - ms) / 1000))
        )
    };
    format!("{when} ({rel})")
}

/// Renders visible claims, one field per line.
pub fn render_claims(c: &ClaimsRef<'_>, now: u64) -> String {
    let preview: String = match std::str::from_utf8(c.payload) {
        Ok(s) if !s.chars().any(char::is_control) => {
            let t: String = s.chars().take(80).collect();
            format!("{t:?}{}", if s.chars().count() > 80 { "…" } else { "" })
        }
        _ => {
            let n = c.payload.len().min(40);
            format!(
                "hex {}{}",
                crate::hex::encode(&c.payload[..n]),
                if c.payload.len() > n { "…" } else { "" }
            )
        }
    };
    format!(
        "  principal:      {:?}\n  client id:      {}\n  request digest: {}\n  issued at:      {}\n  \
         expires at:     {}\n  nonce:          {}\n  round:          {}\n  payload:        {} bytes: {}\n",
        c.principal,
        c.client_id
            .map_or_else(|| "(none)".to_owned(), |s| format!("{s:?}")),
        crate::hex::encode(&c.request_digest),
        fmt_ms(c.issued_at, now),
        fmt_ms(c.expires_at, now),
        crate::hex::encode(&c.nonce),
        c.round,
        c.payload.len(),
        preview
    )
}

fn inspect(args: &InspectArgs) -> ExitCode {
    let now = crate::state::now_ms();
    let token = args.token.trim();
    let ring = match (&args.key_file, &args.key_env) {
        (Some(f), _) => match KeyRing::from_file(f) {
            Ok(r) => Some(r),
            Err(e) => return usage_error(e),
        },
        (None, Some(v)) => match KeyRing::from_env(v) {
            Ok(r) => Some(r),
            Err(e) => return usage_error(e),
        },
        (None, None) => None,
    };
    let digest = match &args.request_digest {
        Some(h) => match crate::hex::decode32(h) {
            Some(d) => Some(d),
            None => return usage_error("--request-digest must be 64 hex digits"),
        },
        None => None,
    };
    if args.principal.is_some() && ring.is_none() {
        return usage_error("--principal/--request-digest need --key-file or --key-env");
    }
    let (text, ok) = inspect_report(token, ring.as_ref(), args.principal.as_deref(), digest, now);
    print!("{text}");
    if ok { exit::ok() } else { exit::failed() }
}

/// The `state inspect` report and whether the token decoded (and opened,
/// when a key ring is given).
pub fn inspect_report(
    token: &str,
    ring: Option<&KeyRing>,
    principal: Option<&str>,
    digest: Option<[u8; 32]>,
    now: u64,
) -> (String, bool) {
    let mut out = format!("token: {} characters\n", token.len());
    let mut buf = Vec::new();
    if let Err(e) = envelope::decode_into(token.as_bytes(), usize::MAX, &mut buf) {
        out.push_str(&format!("envelope: not decodable: {e} ({})\n", e.kind()));
        return (out, false);
    }
    let header = match Header::parse(&buf) {
        Ok(h) => h,
        Err(e) => {
            let v = buf.first().copied().unwrap_or(0);
            out.push_str(&format!(
                "envelope: {} bytes, version byte {v}: {e} ({})\n",
                buf.len(),
                e.kind()
            ));
            return (out, false);
        }
    };
    let c = header.codec;
    out.push_str(&format!(
        "envelope: {} bytes\n  version:   {}\n  key id:    {}\n  algorithm: {} (confidential: {}, nonce-misuse resistant: {})\n",
        buf.len(),
        header.version,
        header.kid,
        c,
        if c.confidential() { "yes" } else { "no" },
        if c.nonce_misuse_resistant() { "yes" } else { "no" },
    ));
    let min = HEADER_LEN + c.nonce_len() + c.tag_len();
    if buf.len() < min {
        out.push_str(&format!(
            "  too short for {c}: {} < {min} bytes\n",
            buf.len()
        ));
        return (out, false);
    }
    let mut decoded = true;
    if c.confidential() {
        out.push_str("claims: encrypted");
        out.push_str(if ring.is_some() {
            "\n"
        } else {
            " (give --key-file to see them)\n"
        });
    } else {
        match claims::decode(&buf[HEADER_LEN..buf.len() - c.tag_len()]) {
            Ok(cl) => {
                out.push_str("claims (visible, NOT yet verified):\n");
                out.push_str(&render_claims(&cl, now));
            }
            Err(e) => {
                out.push_str(&format!("claims: {e}\n"));
                decoded = false;
            }
        }
    }
    let Some(ring) = ring else {
        return (out, decoded);
    };
    let cfg = SealerConfig {
        max_token_len: usize::MAX,
        ..SealerConfig::default()
    };
    let sealer = match Sealer::new(ring, c, cfg) {
        Ok(s) => s,
        Err(e) => {
            out.push_str(&format!("key: unusable: {e}\n"));
            return (out, false);
        }
    };
    let kids: Vec<String> = ring.kids().map(|k| k.to_string()).collect();
    out.push_str(&format!("key ring: ids [{}]\n", kids.join(", ")));
    let mut vbuf = Vec::new();
    let verified = match sealer.verify_tag_in(token.as_bytes(), &mut vbuf) {
        Ok(cl) => cl,
        Err(e) => {
            out.push_str(&format!("opens: NO: {e} ({})\n", e.kind()));
            return (out, false);
        }
    };
    if c.confidential() {
        out.push_str("claims (decrypted):\n");
        out.push_str(&render_claims(&verified, now));
    }
    let mut tbuf = Vec::new();
    let result = match (principal, digest) {
        (Some(p), Some(d)) => {
            let b = Binding {
                principal: p,
                request_digest: &d,
            };
            sealer
                .open_in(token.as_bytes(), &b, now, &mut tbuf)
                .map(|_| ())
        }
        _ => sealer
            .verify_in(token.as_bytes(), now, &mut tbuf)
            .map(|_| ()),
    };
    match result {
        Ok(()) => {
            let what = if principal.is_some() {
                "tag, time window and binding"
            } else {
                "tag and time window (binding not checked)"
            };
            out.push_str(&format!("opens: yes ({what})\n"));
            (out, true)
        }
        Err(e) => {
            let why = match e {
                StateError::Expired => " (tag is valid; expiry is exact, no skew)",
                StateError::NotYetValid => " (tag is valid; issued over 5 s in the future)",
                _ => " (tag is valid)",
            };
            out.push_str(&format!("opens: NO: {e} ({}){why}\n", e.kind()));
            (out, false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> KeyRing {
        KeyRing::from_keys([(3, vec![1; 32])]).unwrap()
    }

    #[test]
    fn inspect_shows_mac_claims_and_open_status() {
        let now = crate::state::now_ms();
        let s = Sealer::new(&ring(), CodecName::HmacSha256, SealerConfig::default()).unwrap();
        let c = s.claims("alice", None, [2; 32], 4, b"hello".to_vec(), now);
        let t = s.seal(&c).unwrap();
        let (text, ok) = inspect_report(&t, None, None, None, now);
        assert!(ok);
        assert!(text.contains("key id:    3"), "{text}");
        assert!(text.contains("hmac-sha256"));
        assert!(
            text.contains("\"alice\"") && text.contains("\"hello\""),
            "{text}"
        );
        let (text, ok) = inspect_report(&t, Some(&ring()), Some("bob"), Some([2; 32]), now);
        assert!(!ok);
        assert!(text.contains("wrong_principal"), "{text}");
        let (text, ok) = inspect_report(&t, Some(&ring()), Some("alice"), Some([2; 32]), now);
        assert!(ok, "{text}");
        let other = KeyRing::from_keys([(3, vec![9; 32])]).unwrap();
        let (text, ok) = inspect_report(&t, Some(&other), None, None, now);
        assert!(!ok && text.contains("bad_tag"), "{text}");
    }

    #[test]
    fn inspect_hides_aead_claims_without_key_and_reports_garbage() {
        let now = crate::state::now_ms();
        let s = Sealer::new(&ring(), CodecName::Aes256GcmSiv, SealerConfig::default()).unwrap();
        let t = s
            .seal(&s.claims("alice", None, [2; 32], 1, b"secret".to_vec(), now))
            .unwrap();
        let (text, ok) = inspect_report(&t, None, None, None, now);
        assert!(
            ok && text.contains("encrypted") && !text.contains("secret"),
            "{text}"
        );
        let (text, ok) = inspect_report(&t, Some(&ring()), None, None, now);
        assert!(ok && text.contains("\"secret\""), "{text}");
        let (text, ok) = inspect_report("!!", None, None, None, now);
        assert!(!ok && text.contains("malformed"), "{text}");
        let (text, ok) = inspect_report("CQAAAAAB", None, None, None, now);
        assert!(!ok && text.contains("unsupported_version"), "{text}");
    }

    #[test]
    fn bench_table_lists_every_codec() {
        let rows: Vec<_> = CodecName::ALL
            .iter()
            .map(|c| Measurement {
                codec: *c,
                token_len: 400,
                seal_ns: 100.0,
                open_ns: 90.0 + f64::from(c.id()),
            })
            .collect();
        let t = render_bench(&rows, 256);
        for c in CodecName::ALL {
            assert!(t.contains(c.as_str()));
        }
        assert_eq!(t.matches("[fastest open of its kind here]").count(), 2);
        assert!(crate::hex::decode32(&"ab".repeat(32)).is_some());
        assert!(crate::hex::decode32("zz").is_none());
    }
}
