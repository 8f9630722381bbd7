//! `elicitkit validate`: check one elicitation message against the spec.

use super::{exit, usage_error};
use crate::findings::{Finding, has_must};
use crate::protocol::jsonrpc::ParseError;
use crate::protocol::validate::{DocumentKind, Options, Report, validate_document};
use crate::protocol::version::Generation;
use clap::{Args as ClapArgs, ValueEnum};
use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

/// Why a document `validate` has no rules for is a usage error.
pub const NOT_ELICITATION: &str = "not an elicitation message, so nothing was checked: give an \
elicitation/create request, an InputRequiredResult, an ElicitResult, a completed result, an \
error response or a notifications/elicitation/complete (bare or in a JSON-RPC message)";

/// Largest file `validate` reads (the protocol parser's cap).
const MAX_INPUT: usize = crate::protocol::jsonrpc::MAX_MESSAGE_BYTES;

/// Arguments of `elicitkit validate`.
#[derive(Debug, ClapArgs)]
#[command(
    about = "Check one elicitation message against the spec",
    long_about = "Reads one JSON message: an elicitation/create request (either generation), an \
InputRequiredResult, a JSON-RPC response holding one, an error response, or an ElicitResult \
(give --schema to check its content). Detects which it is and prints every finding.",
    after_help = "Examples:
  elicitkit validate message.json
  # from standard input
  curl -s ... | elicitkit validate -
  # an ElicitResult against the schema it answers
  elicitkit validate answer.json --schema schema.json
  # judged as one generation, for machines
  elicitkit validate result.json --generation 2026-07-28 \\
      --format json

Exit codes: 0 no MUST finding; 1 a MUST finding; 2 the input cannot be read, or is not an \
elicitation message (nothing to check)."
)]
pub struct Args {
    /// The message file, or `-` for standard input.
    #[arg(default_value = "-")]
    pub file: String,
    /// The requestedSchema (JSON file) an ElicitResult answers.
    #[arg(help_heading = "Judging", long, value_name = "FILE")]
    pub schema: Option<String>,
    /// Judge against this generation instead of inferring it.
    #[arg(help_heading = "Judging", long, value_enum, default_value_t = GenerationArg::Auto)]
    pub generation: GenerationArg,
    /// Output format.
    #[arg(help_heading = "Output", long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// `--generation` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GenerationArg {
    /// Infer from the message.
    Auto,
    /// 2025-11-25.
    #[value(name = "2025-11-25")]
    Legacy,
    /// 2026-07-28.
    #[value(name = "2026-07-28")]
    Modern,
}

impl GenerationArg {
    /// The generation, or `None` for auto.
    pub fn generation(self) -> Option<Generation> {
        match self {
            GenerationArg::Auto => None,
            GenerationArg::Legacy => Some(Generation::Legacy),
            GenerationArg::Modern => Some(Generation::Modern),
        }
    }
}

/// `--format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table for people.
    Table,
    /// JSON for machines.
    Json,
}

/// Runs `elicitkit validate`.
pub fn run(args: Args) -> ExitCode {
    let raw = match read_input(&args.file) {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    let schema = match &args.schema {
        None => None,
        Some(path) => match read_input(path)
            .and_then(|b| crate::protocol::jsonrpc::parse_json(&b).map_err(|e| describe(path, &e)))
        {
            Ok(v) => Some(v),
            Err(e) => return usage_error(e),
        },
    };
    let opts = Options {
        generation: args.generation.generation(),
        schema,
    };
    let report = match validate_document(&raw, &opts) {
        Ok(r) => r,
        Err(e) => return usage_error(describe(display_name(&args.file), &e)),
    };
    if report.kind == DocumentKind::Unknown && !has_must(&report.findings) {
        return usage_error(format!("{}: {NOT_ELICITATION}", display_name(&args.file)));
    }
    match args.format {
        Format::Json => match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => return usage_error(format!("cannot render JSON: {e}")),
        },
        Format::Table => print!("{}", render_table(&report)),
    }
    if has_must(&report.findings) {
        exit::failed()
    } else {
        exit::ok()
    }
}

fn display_name(file: &str) -> &str {
    if file == "-" { "<stdin>" } else { file }
}

fn describe(name: &str, e: &ParseError) -> String {
    match e {
        ParseError::Json {
            line,
            column,
            reason,
        } => {
            let reason = reason
                .rsplit_once(" at line ")
                .map_or(reason.as_str(), |(r, _)| r);
            format!("{name}:{line}:{column}: invalid JSON: {reason}")
        }
        other => format!("{name}: {other}"),
    }
}

fn read_input(file: &str) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    let limit = (MAX_INPUT + 1) as u64;
    let res = if file == "-" {
        std::io::stdin().take(limit).read_to_end(&mut buf)
    } else {
        let path = Path::new(file);
        std::fs::File::open(path).and_then(|f| f.take(limit).read_to_end(&mut buf))
    };
    res.map_err(|e| format!("{}: cannot read: {e}", display_name(file)))?;
    if buf.len() > MAX_INPUT {
        return Err(format!(
            "{}: larger than the {MAX_INPUT}-byte limit",
            display_name(file)
        ));
    }
    Ok(buf)
}

/// Renders a report as an aligned text table.
pub fn render_table(report: &Report) -> String {
    let mut s = format!(
        "kind: {}   generation: {}\n",
        report.kind,
        report
            .generation
            .map_or_else(|| "unknown".to_string(), |g| g.to_string())
    );
    if report.findings.is_empty() {
        s.push_str("no findings\n");
        return s;
    }
    let header = ["SEVERITY", "RULE", "POINTER", "MESSAGE"];
    let rows: Vec<[String; 4]> = report.findings.iter().map(row).collect();
    let mut w = header.map(str::len);
    for r in &rows {
        for (i, c) in r.iter().enumerate().take(3) {
            w[i] = w[i].max(c.len());
        }
    }
    let line = |c: [&str; 4]| {
        format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {}\n",
            c[0],
            c[1],
            c[2],
            c[3],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2]
        )
    };
    s.push_str(&line(header));
    for r in &rows {
        s.push_str(&line([&r[0], &r[1], &r[2], &r[3]]));
    }
    let musts = report
        .findings
        .iter()
        .filter(|f| f.severity == crate::findings::Severity::Must)
        .count();
    s.push_str(&format!(
        "{} finding(s), {musts} MUST\n",
        report.findings.len()
    ));
    s
}

fn row(f: &Finding) -> [String; 4] {
    let pointer = if f.pointer.is_empty() {
        "(root)".to_string()
    } else {
        f.pointer.clone()
    };
    [
        f.severity.to_string(),
        f.rule.clone(),
        pointer,
        f.message.clone(),
    ]
}
