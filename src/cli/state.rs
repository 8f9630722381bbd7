//! `elicitkit state`: choose and debug `requestState` sealing.
//!
//! - `state bench [--quick] [--format json]`: measure every codec on this
//!   machine over a few rounds and print the CPU's relevant features and a
//!   table (token size, seal/open ns as median (min–max), confidentiality,
//!   nonce-misuse resistance), then one recommendation with its reason.
//! - `state inspect TOKEN [--key-file F | --key-env VAR]`: decode the
//!   envelope, show version, key id, algorithm and the claims where visible;
//!   with a key, say whether it opens and, if not, why.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, UNIX_EPOCH};

use clap::{Args as ClapArgs, Subcommand, ValueEnum};
use serde::Serialize;

use super::{exit, usage_error};
use crate::state::claims::{self, ClaimsRef};
use crate::state::cpu::CpuFeatures;
use crate::state::envelope::{self, HEADER_LEN, Header};
use crate::state::measure::{self, Measurement, Recommendation, Spread};
use crate::state::{Binding, CodecName, KeyRing, Sealer, SealerConfig, StateError};

/// `elicitkit state --help` examples. Indented lines are shell commands, run
/// in order by `tests/it/state/cli.rs` up to the live-server part. The
/// example token is checked against the claims it names by a unit test.
const STATE_HELP: &str = r#"Examples (indented lines are shell commands; run them in order):
  elicitkit state bench --quick
  elicitkit state bench --payload 1024 --format json

An example state: hmac-sha256, key id 1, principal alice, bound to
`tools/call profile {}`, valid until 2100, sealed with the key written below
(published here: never use it for real states):
  T=AQAAAAEBAAABlB8pfAAAAAO7LMPYAGVsaWNpdGtpdC1leGFtcG
  T=${T}wAAAAB79evksB8YuH7Gm1Sl6aUKeggg45mxmxQlw5lz1w1i1EA
  T=${T}AAUAAAAAAAJhbGljZXt91yZPO2vIlRKPJua_ZW9roMqFwK8mSw
  T=${T}2Hz8K2TpIB9po
  elicitkit state inspect "$T"
  K=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8
  echo "1:$K" > example-keys.txt
  elicitkit state inspect "$T" --key-file example-keys.txt
  D=efd7af92c07c62e1fb1a6d5297a69429
  D=${D}e820838e66c66c50970e65cf5c358b51
  elicitkit state inspect "$T" --key-file example-keys.txt \
    --principal alice --request-digest $D

A state from a running server (needs curl and a free port 8080; the server's
default codec, aes-256-gcm-siv, encrypts the claims):
  K=$(head -c 32 /dev/urandom | base64 \
    | tr '+/' '-_' | tr -d '=')
  echo "1:$K" > keys.txt
  elicitkit serve --key-file keys.txt & S=$!; sleep 1
  T=$(curl -s http://127.0.0.1:8080/mcp \
    -H 'Authorization: Bearer alice' \
    -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' \
    -H 'Mcp-Method: tools/call' -H 'Mcp-Name: profile' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call",
      "params":{"name":"profile","arguments":{},
      "_meta":{
      "io.modelcontextprotocol/protocolVersion":
        "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities":
        {"elicitation":{}}}}}' \
    | grep -o '"requestState":"[^"]*"' | cut -d'"' -f4)
  elicitkit state inspect "$T"
  elicitkit state inspect "$T" --key-file keys.txt
  kill $S

Exit codes: 0 done (inspect: the token decodes, and opens with a key);
1 it does not; 2 usage error."#;

/// Arguments of `elicitkit state`.
#[derive(Debug, ClapArgs)]
#[command(
    about = "Choose and debug requestState sealing (benchmark codecs, inspect tokens)",
    after_help = STATE_HELP
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
    /// Under a second in total instead of a few (0.7 s and 3.3 s on one
    /// 2-core machine).
    #[arg(long)]
    pub quick: bool,
    /// Payload bytes in the measured state.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(0..=65536))]
    pub payload: u32,
    /// Output: text (a table, the CPU line and one recommendation) or json
    /// (one document: payload, repeats, cpu {arch, features}, codecs
    /// [{codec, token_len, confidential, misuse_resistant, seal_ns and
    /// open_ns as {min, median, max}}], recommendation {codec, reason}).
    #[arg(long, value_enum, default_value_t = BenchFormat::Text)]
    pub format: BenchFormat,
}

/// `state bench --format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchFormat {
    /// A table for people.
    Text,
    /// One JSON document for machines.
    Json,
}

/// Arguments of `elicitkit state inspect`.
#[derive(Debug, ClapArgs)]
#[command(
    long_about = "Decodes the envelope and prints version, key id and algorithm, and the claims \
when the codec does not encrypt them. With --key-file or --key-env (key ring format: one \
`kid:base64url(key)` per line, or one bare key), verifies the token and prints why it does not \
open. With --principal and --request-digest, checks the binding too.\n\n\
Exit status: 0 when the token decodes (and opens, when a key is given), 1 when it does not, \
2 on a usage error or unreadable key.",
    after_help = "Examples that run as they are: elicitkit state --help"
)]
pub struct InspectArgs {
    /// The requestState token.
    pub token: String,
    /// Key ring file.
    #[arg(
        help_heading = "Keys and binding",
        long,
        value_name = "FILE",
        conflicts_with = "key_env"
    )]
    pub key_file: Option<PathBuf>,
    /// Environment variable holding the key ring.
    #[arg(help_heading = "Keys and binding", long, value_name = "VAR")]
    pub key_env: Option<String>,
    /// Expected principal (checks the binding; needs a key).
    #[arg(help_heading = "Keys and binding", long, requires = "request_digest")]
    pub principal: Option<String>,
    /// Expected request digest, 64 hex digits (needs --principal).
    #[arg(
        help_heading = "Keys and binding",
        long,
        value_name = "HEX",
        requires = "principal"
    )]
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
    let payload = args.payload as usize;
    let rows = measure::measure_all(&CodecName::ALL, payload, budget, measure::REPEATS);
    let cpu = CpuFeatures::detect();
    let rec = measure::recommend(&rows, &cpu);
    match args.format {
        BenchFormat::Text => print!("{}", render_bench(&rows, payload, &cpu, rec.as_ref())),
        BenchFormat::Json => println!("{}", bench_json(&rows, payload, &cpu, rec.as_ref())),
    }
    exit::ok()
}

/// `median (min–max)` of a spread, `!` marking a wide one.
fn spread_cell(s: &Spread) -> String {
    let mark = if s.is_wide() { "!" } else { " " };
    format!("{:.0} ({:.0}–{:.0}){mark}", s.median, s.min, s.max)
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// Renders the `state bench` report: the CPU line, the table, what its
/// columns mean, a noise warning when a spread is wide, and the one
/// recommendation.
pub fn render_bench(
    rows: &[Measurement],
    payload: usize,
    cpu: &CpuFeatures,
    rec: Option<&Recommendation>,
) -> String {
    let cells: Vec<[String; 2]> = rows
        .iter()
        .map(|m| [spread_cell(&m.seal_ns), spread_cell(&m.open_ns)])
        .collect();
    let heads = ["seal ns med (min–max)", "open ns med (min–max)"];
    let width = |i: usize| {
        cells
            .iter()
            .map(|c| c[i].chars().count())
            .chain([heads[i].chars().count()])
            .max()
            .unwrap_or(0)
    };
    let (w0, w1) = (width(0), width(1));
    let mut out = format!(
        "requestState codecs on this machine: {payload}-byte payload, {} rounds (each the median \
         of short batches)\n{}\n\n{:<19} {:>6}  {:<5} {:<6}  {:>w0$}  {:>w1$}\n",
        measure::REPEATS,
        cpu.line(),
        "codec",
        "token",
        "conf.",
        "misuse",
        heads[0],
        heads[1],
    );
    for (m, [seal, open]) in rows.iter().zip(&cells) {
        let line = format!(
            "{:<19} {:>6}  {:<5} {:<6}  {seal:>w0$}  {open:>w1$}",
            m.codec.as_str(),
            m.token_len,
            yes_no(m.codec.confidential()),
            yes_no(m.codec.nonce_misuse_resistant()),
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&legend(rows));
    if let Some(r) = rec {
        out.push_str(&format!("\nRecommended: {}: {}.\n", r.codec, r.reason));
    }
    out.push_str(
        "Rigorous numbers: cargo bench --bench state_codec (README: its duration and quick mode)\n",
    );
    out
}

/// What the table's columns mean, the nonce bound of the codecs it
/// applies to, and a warning when a spread is wide.
fn legend(rows: &[Measurement]) -> String {
    let mut out = String::from(
        "\ntoken = characters; conf. = claims hidden from the client; misuse = safe if a nonce \
         repeats\n",
    );
    let bounded: Vec<&str> = rows
        .iter()
        .filter(|m| !m.codec.nonce_misuse_resistant())
        .map(|m| m.codec.as_str())
        .collect();
    if !bounded.is_empty() {
        out.push_str(&format!(
            "{}: random 96-bit nonces, at most 2^32 seals per key\n",
            bounded.join(", ")
        ));
    }
    let wide = rows
        .iter()
        .any(|m| m.seal_ns.is_wide() || m.open_ns.is_wide());
    if wide {
        out.push_str(&format!(
            "! wide spread (max > {}× min): noisy host, rerun or use cargo bench\n",
            measure::WIDE_SPREAD
        ));
    }
    out
}

/// `state bench --format json`.
#[derive(Debug, Serialize)]
struct BenchDoc {
    payload: usize,
    repeats: usize,
    cpu: CpuDoc,
    codecs: Vec<CodecDoc>,
    recommendation: Option<RecommendationDoc>,
}

#[derive(Debug, Serialize)]
struct CpuDoc {
    arch: &'static str,
    /// Rust's feature names (`aes`, `vaes`, `avx512f`, ...) to presence.
    features: std::collections::BTreeMap<&'static str, bool>,
}

#[derive(Debug, Serialize)]
struct CodecDoc {
    codec: &'static str,
    token_len: usize,
    confidential: bool,
    misuse_resistant: bool,
    seal_ns: Spread,
    open_ns: Spread,
}

#[derive(Debug, Serialize)]
struct RecommendationDoc {
    codec: &'static str,
    reason: String,
}

/// A spread rounded to 0.1 ns (the batches do not resolve finer).
fn rounded(s: Spread) -> Spread {
    let r = |x: f64| (x * 10.0).round() / 10.0;
    Spread {
        min: r(s.min),
        median: r(s.median),
        max: r(s.max),
    }
}

/// Renders the `state bench` report as one JSON document.
pub fn bench_json(
    rows: &[Measurement],
    payload: usize,
    cpu: &CpuFeatures,
    rec: Option<&Recommendation>,
) -> String {
    let doc = BenchDoc {
        payload,
        repeats: measure::REPEATS,
        cpu: CpuDoc {
            arch: cpu.arch,
            features: cpu.flags.iter().map(|f| (f.name, f.present)).collect(),
        },
        codecs: rows
            .iter()
            .map(|m| CodecDoc {
                codec: m.codec.as_str(),
                token_len: m.token_len,
                confidential: m.codec.confidential(),
                misuse_resistant: m.codec.nonce_misuse_resistant(),
                seal_ns: rounded(m.seal_ns),
                open_ns: rounded(m.open_ns),
            })
            .collect(),
        recommendation: rec.map(|r| RecommendationDoc {
            codec: r.codec.as_str(),
            reason: r.reason.clone(),
        }),
    };
    serde_json::to_string_pretty(&doc).unwrap_or_default()
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

    /// Rows with medians 100 + 10 × codec id; aes-256-gcm's open spread is wide.
    fn fake_rows() -> Vec<Measurement> {
        CodecName::ALL
            .iter()
            .map(|c| {
                let med = 100.0 + 10.0 * f64::from(c.id());
                let open_max = if *c == CodecName::Aes256Gcm {
                    300.0
                } else {
                    med + 5.0
                };
                Measurement {
                    codec: *c,
                    token_len: 400,
                    seal_ns: Spread {
                        min: med - 5.0,
                        median: med,
                        max: med + 5.0,
                    },
                    open_ns: Spread {
                        min: med - 5.04,
                        median: med,
                        max: open_max,
                    },
                }
            })
            .collect()
    }

    fn fake_cpu() -> CpuFeatures {
        use crate::state::cpu::CpuFlag;
        CpuFeatures {
            arch: "x86_64",
            flags: vec![
                CpuFlag {
                    name: "aes",
                    label: "AES-NI",
                    present: true,
                },
                CpuFlag {
                    name: "pclmulqdq",
                    label: "PCLMULQDQ",
                    present: true,
                },
                CpuFlag {
                    name: "vaes",
                    label: "VAES",
                    present: false,
                },
            ],
        }
    }

    #[test]
    fn bench_table_shows_spreads_cpu_and_one_recommendation() {
        let rows = fake_rows();
        let cpu = fake_cpu();
        let rec = measure::recommend(&rows, &cpu).unwrap();
        let t = render_bench(&rows, 256, &cpu, Some(&rec));
        for c in CodecName::ALL {
            let row = format!("{c} ");
            assert_eq!(t.lines().filter(|l| l.starts_with(&row)).count(), 1, "{t}");
        }
        assert!(t.contains("256-byte payload, 5 rounds"), "{t}");
        assert!(
            t.contains("CPU (x86_64): AES-NI yes, PCLMULQDQ yes, VAES no"),
            "{t}"
        );
        assert!(t.contains("open ns med (min–max)"), "{t}");
        // hmac-sha256 (id 1): seal 110 (105–115); aes-256-gcm (id 3): open 130 (125–300), wide
        let hmac = t.lines().find(|l| l.starts_with("hmac-sha256")).unwrap();
        assert!(
            hmac.contains("110 (105–115) ") && !hmac.contains('!'),
            "{hmac}"
        );
        let gcm = t.lines().find(|l| l.starts_with("aes-256-gcm ")).unwrap();
        assert!(gcm.ends_with("130 (125–300)!"), "{gcm}");
        assert!(t.contains("noisy host, rerun or use cargo bench"), "{t}");
        assert!(
            t.contains("aes-256-gcm, chacha20-poly1305: random 96-bit nonces"),
            "{t}"
        );
        assert_eq!(t.matches("Recommended:").count(), 1, "{t}");
        assert!(
            t.contains("Recommended: aes-256-gcm-siv: AES-NI with PCLMULQDQ present"),
            "{t}"
        );
        assert!(t.contains("open 140 ns median"), "{t}");
        let calm: Vec<Measurement> = rows
            .iter()
            .map(|m| Measurement {
                open_ns: m.seal_ns,
                ..*m
            })
            .collect();
        assert!(!render_bench(&calm, 256, &cpu, None).contains("noisy"));
    }

    #[test]
    fn bench_json_parses_back_with_every_field() {
        let rows = fake_rows();
        let cpu = fake_cpu();
        let rec = measure::recommend(&rows, &cpu).unwrap();
        let doc: serde_json::Value =
            serde_json::from_str(&bench_json(&rows, 1024, &cpu, Some(&rec))).unwrap();
        assert_eq!(doc["payload"], 1024);
        assert_eq!(doc["repeats"], measure::REPEATS);
        assert_eq!(doc["cpu"]["arch"], "x86_64");
        assert_eq!(doc["cpu"]["features"]["aes"], true);
        assert_eq!(doc["cpu"]["features"]["vaes"], false);
        let codecs = doc["codecs"].as_array().unwrap();
        assert_eq!(codecs.len(), CodecName::ALL.len());
        let gcm = &codecs[2];
        assert_eq!(gcm["codec"], "aes-256-gcm");
        assert_eq!(gcm["token_len"], 400);
        assert_eq!(gcm["confidential"], true);
        assert_eq!(gcm["misuse_resistant"], false);
        assert_eq!(gcm["seal_ns"]["median"], 130.0);
        assert_eq!(gcm["open_ns"]["min"], 125.0, "rounded to 0.1 ns");
        assert_eq!(gcm["open_ns"]["max"], 300.0);
        assert_eq!(doc["recommendation"]["codec"], "aes-256-gcm-siv");
        assert_eq!(doc["recommendation"]["reason"], rec.reason.as_str());
        let none: serde_json::Value =
            serde_json::from_str(&bench_json(&rows, 0, &cpu, None)).unwrap();
        assert!(none["recommendation"].is_null());
    }

    /// The example state in `state --help` is what its text says: the
    /// claims it names, sealed with the key it writes.
    #[test]
    fn help_example_token_holds_the_claims_it_names() {
        let line = |prefix: &str| {
            STATE_HELP
                .lines()
                .find_map(|l| l.strip_prefix(prefix))
                .unwrap_or_else(|| panic!("{prefix} in the help"))
                .to_owned()
        };
        let token: String = STATE_HELP
            .lines()
            .filter_map(|l| {
                l.strip_prefix("  T=${T}")
                    .or_else(|| l.strip_prefix("  T=").filter(|t| !t.starts_with('$')))
            })
            .collect();
        let key = line("  K=");
        let ring = KeyRing::parse(&format!("1:{key}")).unwrap();
        let digest = crate::state::request_digest("tools/call", "profile", &serde_json::json!({}));
        assert_eq!(
            crate::hex::encode(&digest.unwrap()),
            format!("{}{}", line("  D="), line("  D=${D}"))
        );
        let claims = crate::state::Claims {
            principal: "alice".into(),
            client_id: None,
            request_digest: digest.unwrap(),
            issued_at: 1_735_689_600_000,  // 2025-01-01
            expires_at: 4_102_444_800_000, // 2100-01-01
            nonce: *b"elicitkit-exampl",
            round: 1,
            payload: b"{}".to_vec(),
        };
        let s = Sealer::new(&ring, CodecName::HmacSha256, SealerConfig::default()).unwrap();
        assert_eq!(s.seal(&claims).unwrap(), token);
        // clap wraps longer lines on a narrow terminal, breaking commands
        for l in STATE_HELP.lines().filter(|l| l.starts_with(' ')) {
            assert!(l.chars().count() <= 60, "{l}");
        }
    }

    #[test]
    fn request_digests_parse_as_64_hex_digits() {
        assert!(crate::hex::decode32(&"ab".repeat(32)).is_some());
        assert!(crate::hex::decode32("zz").is_none());
    }
}
