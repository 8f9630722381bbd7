//! Negative numbers on the command line. Clap reads `--rate -5` as the
//! option `--rate` followed by an unknown flag `-5` ("unexpected argument
//! '-5' found"), and `--users=-5` as "invalid digit found in string". No
//! option of elicitkit takes a negative number, so [`parse`] says that, for
//! every option that takes a value, before clap parses anything.

use clap::error::ErrorKind;
use clap::{Arg, Command, Parser};
use std::ffi::OsString;

/// Parses the process's arguments as `P`, refusing a negative number given
/// to any option first (exit 2 with clap's usage hint, as clap's own errors).
pub fn parse<P: Parser>() -> P {
    let argv: Vec<OsString> = std::env::args_os().collect();
    if let Some(e) = refuse(P::command(), &argv) {
        e.exit();
    }
    P::parse_from(argv)
}

/// Whether `v` reads as a negative number (`-5`, `-0.5`, `-.5`, `-5s`).
fn negative(v: &str) -> bool {
    let rest = v.strip_prefix('-').unwrap_or_default();
    let rest = rest.strip_prefix('.').unwrap_or(rest);
    v.starts_with('-') && rest.starts_with(|c: char| c.is_ascii_digit())
}

/// The option a token names (`--rate`, `--rate=…`, `-r`), with the value
/// attached to it (`--rate=-5`), when `cmd` has one.
fn option<'a>(cmd: &'a Command, token: &'a str) -> Option<(&'a Arg, Option<&'a str>)> {
    if let Some(long) = token.strip_prefix("--") {
        let (name, value) = match long.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (long, None),
        };
        let arg = cmd.get_arguments().find(|a| {
            a.get_long() == Some(name) || a.get_all_aliases().is_some_and(|al| al.contains(&name))
        })?;
        return Some((arg, value));
    }
    let mut chars = token.strip_prefix('-')?.chars();
    let short = chars.next()?;
    let arg = cmd.get_arguments().find(|a| a.get_short() == Some(short))?;
    let rest = chars.as_str();
    Some((
        arg,
        (!rest.is_empty()).then_some(rest.trim_start_matches('=')),
    ))
}

/// Whether `arg` takes a value a negative number could be given to (a flag
/// takes none; `--serve-arg` takes anything, hyphens included).
fn takes_number(arg: &Arg) -> bool {
    arg.get_num_args().is_some_and(|n| n.takes_values()) && !arg.is_allow_hyphen_values_set()
}

/// The error for the first negative number `argv` gives an option, if any.
pub fn refuse(mut cmd: Command, argv: &[OsString]) -> Option<clap::Error> {
    cmd.build();
    let mut cmd = &cmd;
    let mut tokens = argv.iter().skip(1).map(|t| t.to_string_lossy());
    while let Some(token) = tokens.next() {
        if token == "--" {
            return None;
        }
        if !token.starts_with('-') {
            if let Some(sub) = cmd.find_subcommand(token.as_ref()) {
                cmd = sub;
            }
            continue;
        }
        let Some((arg, attached)) = option(cmd, &token) else {
            continue;
        };
        if !takes_number(arg) {
            continue;
        }
        let value = match attached {
            Some(v) => v.to_owned(),
            None => match tokens.next() {
                Some(v) => v.into_owned(),
                None => return None,
            },
        };
        if negative(&value) {
            let name = match (arg.get_long(), arg.get_short()) {
                (Some(l), _) => format!("--{l}"),
                (None, Some(s)) => format!("-{s}"),
                (None, None) => arg.get_id().to_string(),
            };
            let shown = match arg.get_value_names() {
                Some(v) => format!("{name} <{}>", v[0]),
                None => name,
            };
            let mut sub = cmd.clone();
            return Some(sub.error(
                ErrorKind::ValueValidation,
                format!(
                    "invalid value '{value}' for '{shown}': a negative number, and no elicitkit \
                     option takes one"
                ),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        sub: Sub,
    }
    #[derive(clap::Subcommand)]
    enum Sub {
        Load {
            #[arg(long, short)]
            rate: Option<f64>,
            #[arg(long, value_name = "N")]
            users: Option<usize>,
            #[arg(long)]
            quiet: bool,
            #[arg(long, allow_hyphen_values = true)]
            serve_arg: Vec<String>,
        },
    }

    fn refused(args: &[&str]) -> Option<String> {
        let argv: Vec<OsString> = std::iter::once("elicitkit")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        refuse(Cli::command(), &argv).map(|e| e.to_string())
    }

    #[test]
    fn every_spelling_of_a_negative_value_is_refused_by_name() {
        for (args, shown, value) in [
            (&["load", "--rate", "-5"][..], "--rate <RATE>", "-5"),
            (&["load", "--rate=-0.5"], "--rate <RATE>", "-0.5"),
            (&["load", "-r", "-5"], "--rate <RATE>", "-5"),
            (&["load", "-r-5"], "--rate <RATE>", "-5"),
            (&["load", "--users", "-.5"], "--users <N>", "-.5"),
        ] {
            let e = refused(args).unwrap_or_else(|| panic!("{args:?} accepted"));
            assert!(
                e.contains(&format!(
                    "invalid value '{value}' for '{shown}': a negative number, and no elicitkit \
                     option takes one"
                )),
                "{args:?}: {e}"
            );
        }
    }

    #[test]
    fn other_values_flags_and_hyphen_options_pass() {
        for args in [
            &["load", "--rate", "5"][..],
            &["load", "--quiet", "--users", "3"],
            &["load", "--serve-arg", "-5"],
            &["load", "--serve-arg=--flaw"],
            &["load", "--rate", "-x"],
            &["load", "--", "--rate", "-5"],
        ] {
            assert_eq!(refused(args), None, "{args:?}");
        }
    }
}
