//! Progress on standard error: an `indicatif` bar when stderr is a terminal, nothing while
//! running otherwise, and in both cases the caller's one-line summary at the end (so logs and
//! pipes get one line, not a stream of redraws).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Instant;

pub struct Progress {
    bar: Option<ProgressBar>,
    start: Instant,
}

impl Progress {
    /// A bar of `total` steps of `unit` (e.g. "keys", "runs"); `total` 0 = unknown (a counter).
    pub fn new(total: u64, unit: &str) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let (bar, template) = if total > 0 {
                (
                    ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr()),
                    format!("{{elapsed_precise}} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit} (eta {{eta}}) {{msg}}"),
                )
            } else {
                (
                    ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
                    format!("{{elapsed_precise}} {{spinner}} {{human_pos}} {unit} ({{per_sec}}) {{msg}}"),
                )
            };
            if let Ok(style) = ProgressStyle::with_template(&template) {
                bar.set_style(style.progress_chars("#>-"));
            }
            bar
        });
        Progress {
            bar,
            start: Instant::now(),
        }
    }

    /// A spinner for work without steps to count (it ticks on its own).
    pub fn spinner(message: &str) -> Progress {
        let p = Progress::new(0, "");
        if let Some(b) = &p.bar {
            if let Ok(style) = ProgressStyle::with_template("{elapsed_precise} {spinner} {msg}") {
                b.set_style(style);
            }
            b.set_message(message.to_string());
            b.enable_steady_tick(std::time::Duration::from_millis(100));
        }
        p
    }

    pub fn inc(&mut self, n: u64) {
        if let Some(b) = &self.bar {
            b.inc(n);
        }
    }

    pub fn message(&mut self, m: &str) {
        if let Some(b) = &self.bar {
            b.set_message(m.to_string());
        }
    }

    /// Clears the bar and prints `summary` (with the elapsed time) unless it is empty.
    pub fn finish(&mut self, summary: &str) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        if !summary.is_empty() {
            eprintln!(
                "tersedb: {summary} in {:.1} s",
                self.start.elapsed().as_secs_f64()
            );
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}
