//! The live view of a load phase on stderr. On a terminal, a panel
//! redrawn in place every second ([`Snapshot::panel`]): the phase and how
//! far along it is, the last interval's rate (beside the offered one in the
//! open model), what is in flight, the errors by class, p50 and p99 of the
//! last interval and a small histogram of its end-to-end latencies, every
//! line cut to the terminal's width. Off a terminal (logs, CI), one plain
//! line per closed interval ([`Snapshot::render`]), no escapes. The wait
//! for a synchronized start and the soak's cool-down print one line the
//! same way (every second on a terminal, every 5 s off one).

use crate::load::metrics::set::{BAND_EDGES_MS, BANDS};
use std::io::{IsTerminal, Write as _};
use std::time::{Duration, Instant};

/// One progress line (or panel) and when it was last printed.
#[derive(Debug)]
pub struct ProgressLine {
    tty: bool,
    last: Option<Instant>,
    printed: bool,
    /// Lines of the panel on screen (the cursor is below it).
    panel: usize,
    /// The start of the last interval printed off a terminal.
    interval: Option<f64>,
}

impl ProgressLine {
    /// A line whose first print is due at once (`immediate`) or one
    /// interval from now.
    pub fn new(immediate: bool) -> Self {
        Self::on(std::io::stderr().is_terminal(), immediate)
    }

    fn on(tty: bool, immediate: bool) -> Self {
        ProgressLine {
            tty,
            last: (!immediate).then(Instant::now),
            printed: false,
            panel: 0,
            interval: None,
        }
    }

    /// Whether a line is due now; if so, it counts as printed now.
    pub fn due(&mut self) -> bool {
        let every = Duration::from_secs(if self.tty { 1 } else { 5 });
        if self.last.is_some_and(|t| t.elapsed() < every) {
            return false;
        }
        self.last = Some(Instant::now());
        true
    }

    /// Whether a load phase's view is due: every second on a terminal;
    /// off one, once per closed interval (`last_interval`: the start of
    /// the last one closed, if any).
    pub fn due_for(&mut self, last_interval: Option<f64>) -> bool {
        if self.tty {
            return self.due();
        }
        if last_interval.is_none() || last_interval == self.interval {
            return false;
        }
        self.interval = last_interval;
        true
    }

    /// Prints `line`: over the previous one on a terminal, else on its own.
    pub fn print(&mut self, line: &str) {
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
        self.printed = true;
    }

    /// Shows a load phase's view, `width` columns wide: the panel over the
    /// previous one on a terminal, else the one-line form.
    pub fn show(&mut self, snap: &Snapshot<'_>, width: usize) {
        if !self.tty {
            self.print(&snap.render(width));
            return;
        }
        let text = self.redraw(&snap.panel(width));
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
    }

    /// The bytes that replace the panel on screen with `lines`: up to the
    /// old panel's first line, clear to the end of the screen, the lines.
    fn redraw(&mut self, lines: &[String]) -> String {
        let mut text = String::new();
        if self.panel > 0 {
            text.push_str(&format!("\x1b[{}A", self.panel));
        }
        text.push_str("\r\x1b[J");
        for l in lines {
            text.push_str(l);
            text.push('\n');
        }
        self.panel = lines.len();
        text
    }

    /// Ends an in-place line with a newline, so what follows starts clean
    /// (a panel ends with one already).
    pub fn finish(&self) {
        if self.printed && self.tty {
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// What the live line of a load phase shows: its phase, the achieved rate
/// of the last interval (and the offered one in the open model), what is
/// in flight, the errors by class, the last p99.
#[derive(Debug)]
pub struct Snapshot<'a> {
    /// The phase's name (the plan's, or a capacity step's).
    pub label: &'a str,
    /// Time since the phase began.
    pub elapsed: Duration,
    /// What the phase drives and which part is measured.
    pub timeline: &'a crate::load::spec::shape::Timeline,
    /// Round trips finished so far.
    pub round_trips: u64,
    /// Round trips per second in the last interval.
    pub last_rate: Option<f64>,
    /// The last interval's span, seconds from the measured window's start
    /// (start, length): the open model's offered rate is the schedule's
    /// over the same span.
    pub last_span: Option<(f64, f64)>,
    /// This process's share of the schedule's arrivals (a segment of a
    /// distributed run takes 1/N of them).
    pub share: f64,
    /// Round trips in flight now.
    pub in_flight: u64,
    /// Unexpected round trips so far.
    pub unexpected: u64,
    /// The last interval's unexpected round trips by class, most first.
    pub last_errors: Vec<(String, u64)>,
    /// The last interval's end-to-end p50 (ms).
    pub p50_ms: Option<f64>,
    /// The last interval's end-to-end p99 (ms).
    pub p99_ms: Option<f64>,
    /// The last interval's end-to-end latencies per band of
    /// [`BAND_EDGES_MS`].
    pub bands: Option<[u64; BANDS]>,
}

impl Snapshot<'_> {
    /// Where the phase is: `launch` (closed-model users starting),
    /// `warm-up`, `measuring`, or `drain` (past the plan, waiting for what
    /// is in flight).
    pub fn phase(&self) -> &'static str {
        let t = self.timeline;
        let launch = t.lead.saturating_sub(t.warmup);
        match self.elapsed {
            e if e < launch => "launch",
            e if e < t.lead => "warm-up",
            e if e < t.lead + t.measured => "measuring",
            _ => "drain",
        }
    }

    /// The open model's offered rate beside the achieved one: the
    /// schedule's mean over the last interval's span (so the two cover
    /// the same time), or its rate now before any interval closed.
    pub fn offered(&self) -> f64 {
        use crate::load::spec::shape::{mean_target, target_at};
        let t = self.timeline;
        let rate = match self.last_span {
            Some((start, len)) => {
                let from = t.lead + Duration::from_secs_f64(start.max(0.0));
                mean_target(
                    &t.stages,
                    from,
                    from + Duration::from_secs_f64(len.max(0.0)),
                )
            }
            None => target_at(&t.stages, self.elapsed.min(t.total())),
        };
        rate * self.share
    }

    /// The last interval's rate (`-` before the first) and, in the open
    /// model, what the schedule offered (` of N/s offered`).
    fn rates(&self) -> (String, String) {
        use crate::load::spec::shape::Model;
        let rate = self
            .last_rate
            .map_or_else(|| "-".to_owned(), |r| format!("{r:.0}/s"));
        let offered = match self.timeline.model {
            Model::Open => format!(" of {:.0}/s offered", self.offered()),
            Model::Closed => String::new(),
        };
        (rate, offered)
    }

    /// The line, cut to `width` columns.
    pub fn render(&self, width: usize) -> String {
        let t = self.timeline;
        let (rate, offered) = self.rates();
        let errors = if self.last_errors.is_empty() {
            String::new()
        } else {
            let parts: Vec<String> = self
                .last_errors
                .iter()
                .take(3)
                .map(|(c, n)| format!("{c} {n}"))
                .collect();
            format!(" (last: {})", parts.join(", "))
        };
        let line = format!(
            "{} {} {:.0}/{:.0}s  {rate}{offered}  {} done  {} in flight  {} unexpected{errors}  \
             p50 {}  p99 {}",
            self.label,
            self.phase(),
            self.elapsed.as_secs_f64(),
            t.total().as_secs_f64(),
            self.round_trips,
            self.in_flight,
            self.unexpected,
            ms_or_dash(self.p50_ms),
            ms_or_dash(self.p99_ms),
        );
        fit(&line, width)
    }

    /// The panel's lines, each cut to `width` columns: the phase with a
    /// bar of how far along it is; rates, in flight and done; errors; p50
    /// and p99 of the last interval; its latencies per band, the bands
    /// from the first to the last with any, a bar each.
    pub fn panel(&self, width: usize) -> Vec<String> {
        let t = self.timeline;
        let total = t.total().as_secs_f64();
        let head = format!(
            "{} · {} {:.0}/{:.0}s ",
            self.label,
            self.phase(),
            self.elapsed.as_secs_f64(),
            total
        );
        let room = width.saturating_sub(head.chars().count() + 2).min(40);
        let done = if total > 0.0 {
            ((self.elapsed.as_secs_f64() / total).min(1.0) * room as f64).round() as usize
        } else {
            room
        };
        let mut lines = vec![format!(
            "{head}[{}{}]",
            "█".repeat(done),
            "·".repeat(room - done)
        )];
        let (rate, offered) = self.rates();
        lines.push(format!(
            "rate {rate}{offered} · {} in flight · {} done",
            self.in_flight, self.round_trips
        ));
        let classes: Vec<String> = self
            .last_errors
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        lines.push(match (self.unexpected, classes.is_empty()) {
            (0, _) => "errors none".to_owned(),
            (n, true) => format!("errors {n} (none in the last interval)"),
            (n, false) => format!("errors {n} · last interval: {}", classes.join(", ")),
        });
        lines.push(format!(
            "latency, last interval: p50 {} · p99 {}",
            ms_or_dash(self.p50_ms),
            ms_or_dash(self.p99_ms)
        ));
        if let Some(bands) = self.bands {
            lines.extend(histogram(&bands, width));
        }
        lines.into_iter().map(|l| fit(&l, width)).collect()
    }
}

/// `12.3ms`, or `-` without a value.
fn ms_or_dash(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |p| format!("{p:.1}ms"))
}

/// The name of band `i`: `<1 ms`, `1-2 ms`, …, `≥1000 ms`.
fn band_name(i: usize) -> String {
    let edge = |k: usize| format!("{}", BAND_EDGES_MS[k]);
    match i {
        0 => format!("<{} ms", edge(0)),
        i if i == BAND_EDGES_MS.len() => format!("≥{} ms", edge(i - 1)),
        i => format!("{}-{} ms", edge(i - 1), edge(i)),
    }
}

/// One row per band from the first to the last with latencies in it: its
/// name, a bar as long as its share of the largest band, its count.
fn histogram(bands: &[u64; BANDS], width: usize) -> Vec<String> {
    let (Some(first), Some(last)) = (
        bands.iter().position(|&n| n > 0),
        bands.iter().rposition(|&n| n > 0),
    ) else {
        return Vec::new();
    };
    let most = bands.iter().copied().max().unwrap_or(1).max(1);
    let bar_room = width.saturating_sub(11 + 2 + 8).clamp(1, 30);
    (first..=last)
        .map(|i| {
            let n = bands[i];
            let len = ((n as f64 / most as f64) * bar_room as f64).ceil() as usize;
            format!("{:>11} {:<bar_room$} {n}", band_name(i), "█".repeat(len))
        })
        .collect()
}

/// The unexpected round trips of an interval by class, most first.
pub fn error_classes(i: &crate::load::metrics::set::IntervalStats) -> Vec<(String, u64)> {
    use crate::load::metrics::hlog::OUT;
    use crate::load::metrics::set::is_error_label;
    let mut by: std::collections::BTreeMap<String, u64> = Default::default();
    for (tag, stats) in &i.metrics {
        if let Some((_, label)) = tag.strip_prefix(OUT).and_then(|r| r.rsplit_once(':'))
            && is_error_label(label)
        {
            *by.entry(label.to_owned()).or_insert(0) += stats.count;
        }
    }
    let mut v: Vec<(String, u64)> = by.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// `line` cut to `width` characters (an ellipsis marks the cut).
pub fn fit(line: &str, width: usize) -> String {
    if line.chars().count() <= width {
        return line.to_owned();
    }
    let mut out: String = line.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The terminal's width in columns (stderr's), else `$COLUMNS`, else 100.
pub fn width() -> usize {
    #[cfg(unix)]
    {
        let mut ws = libc::winsize {
            ws_row: 0,
            ws_col: 0,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCGWINSZ writes one winsize into the struct we own.
        if unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0
            && ws.ws_col > 0
        {
            return usize::from(ws.ws_col);
        }
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|c| *c > 0)
        .unwrap_or(100)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::spec::shape::{Model, Timeline};

    /// The open model at 500/s for 10 s.
    fn open_500() -> Timeline {
        Timeline::fixed(
            Model::Open,
            500.0,
            1.0,
            Duration::ZERO,
            Duration::from_secs(10),
        )
    }

    fn snap(t: &Timeline, secs: f64) -> Snapshot<'_> {
        Snapshot {
            label: "smoke",
            elapsed: Duration::from_secs_f64(secs),
            timeline: t,
            round_trips: 1200,
            last_rate: Some(410.0),
            last_span: None,
            share: 1.0,
            in_flight: 7,
            unexpected: 3,
            last_errors: vec![("timeout".into(), 2), ("misrouted".into(), 1)],
            p50_ms: Some(4.56),
            p99_ms: Some(12.34),
            bands: Some([0, 0, 120, 240, 50, 3, 0, 0, 0, 0, 0]),
        }
    }

    #[test]
    fn the_line_names_the_phase_the_rates_and_the_errors() {
        let closed = Timeline::fixed(
            Model::Closed,
            8.0,
            4.0,
            Duration::from_secs(2),
            Duration::from_secs(10),
        );
        assert_eq!(snap(&closed, 1.0).phase(), "launch");
        assert_eq!(snap(&closed, 3.0).phase(), "warm-up");
        assert_eq!(snap(&closed, 5.0).phase(), "measuring");
        assert_eq!(snap(&closed, 14.5).phase(), "drain");
        let line = snap(&closed, 5.0).render(200);
        assert!(
            line.starts_with("smoke measuring 5/14s  410/s  1200 done  7 in flight"),
            "{line}"
        );
        assert!(
            line.contains("3 unexpected (last: timeout 2, misrouted 1)"),
            "{line}"
        );
        assert!(!line.contains("offered"), "{line}");
        let open = open_500();
        assert!(
            snap(&open, 5.0)
                .render(200)
                .contains("410/s of 500/s offered")
        );
    }

    /// The line read "2451/s of 0/s offered" once the schedule had ended:
    /// the offered rate is the schedule's over the interval the achieved
    /// rate covers, not its value at the moment of printing.
    #[test]
    fn the_offered_rate_covers_the_last_interval() {
        let open = open_500();
        let mut s = snap(&open, 10.4);
        assert!(
            s.render(200).contains("of 0/s offered"),
            "past the end, now"
        );
        s.last_span = Some((9.0, 1.0));
        assert!(
            s.render(200).contains("410/s of 500/s offered"),
            "{}",
            s.render(200)
        );
        s.share = 0.5;
        assert!(
            s.render(200).contains("of 250/s offered"),
            "a segment's share"
        );
    }

    #[test]
    fn the_panel_shows_rates_errors_percentiles_and_a_histogram_that_fit() {
        let t = open_500();
        let s = snap(&t, 5.0);
        let wide = s.panel(100);
        assert!(
            wide[0].starts_with("smoke · measuring 5/10s ["),
            "{wide:#?}"
        );
        assert_eq!(
            wide[1],
            "rate 410/s of 500/s offered · 7 in flight · 1200 done"
        );
        assert_eq!(wide[2], "errors 3 · last interval: timeout 2, misrouted 1");
        assert_eq!(wide[3], "latency, last interval: p50 4.6ms · p99 12.3ms");
        // Bands from the first to the last with any: 2-5 ms to 20-50 ms.
        let rows: Vec<&str> = wide[4..].iter().map(|r| r.trim_start()).collect();
        assert_eq!(rows.len(), 4, "{rows:#?}");
        assert!(rows[0].starts_with("2-5 ms █") && rows[0].ends_with(" 120"));
        assert!(rows[1].starts_with("5-10 ms ") && rows[1].ends_with(" 240"));
        assert!(rows[3].starts_with("20-50 ms █ ") && rows[3].ends_with(" 3"));
        // The largest band has the longest bar.
        let bar = |r: &str| r.matches('█').count();
        assert!(bar(rows[1]) > bar(rows[0]) && bar(rows[0]) > bar(rows[3]));
        for width in [30, 60] {
            for l in s.panel(width) {
                assert!(l.chars().count() <= width, "{width}: {l:?}");
            }
        }
    }

    /// A redraw goes up over the panel on screen and clears below it.
    #[test]
    fn a_redraw_replaces_the_panel_in_place() {
        let mut line = ProgressLine::on(true, true);
        let first = line.redraw(&["a".into(), "b".into(), "c".into()]);
        assert_eq!(first, "\r\x1b[Ja\nb\nc\n");
        let second = line.redraw(&["d".into()]);
        assert_eq!(second, "\x1b[3A\r\x1b[Jd\n");
    }

    /// Off a terminal: a line each time an interval closes, never twice
    /// for one, none before the first.
    #[test]
    fn off_a_terminal_a_line_per_closed_interval() {
        let mut line = ProgressLine::on(false, true);
        assert!(!line.due_for(None));
        assert!(line.due_for(Some(0.0)));
        assert!(!line.due_for(Some(0.0)));
        assert!(line.due_for(Some(1.0)));
    }

    #[test]
    fn the_line_fits_the_terminal() {
        let t = open_500();
        let line = snap(&t, 5.0).render(40);
        assert_eq!(line.chars().count(), 40);
        assert!(line.ends_with('…'));
        assert_eq!(fit("short", 40), "short");
    }
}
