//! Line plots as SVG, for the benchmarks' curves in `docs/` (no plotting dependency: a plot is
//! a few hundred bytes of text, and the figures beside it are the record).
//!
//! The x axis is logarithmic in base 2 (client counts: 1, 2, 4, … 64), the y axis linear from
//! 0 to a round number above the largest value.

use std::fmt::Write as _;

/// One line of a plot: its name in the legend and its points `(x, y)`, `x > 0`.
#[derive(Clone, Debug)]
pub struct Series {
    /// Its name in the legend.
    pub name: String,
    /// Its points, `(x, y)`, in the order the line joins them.
    pub points: Vec<(f64, f64)>,
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLOURS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
];

/// The smallest of 1, 2, 5 × 10^k that is at least `v` (1 for 0 or less).
fn round_up(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let scale = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * scale)
        .find(|&c| c >= v)
        .unwrap_or(10.0 * scale)
}

/// Text safe inside SVG.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A plot of `series` with a title and axis labels, as an SVG document. Points with a
/// non-positive or non-finite `x`, or a non-finite `y`, are left out.
pub fn svg(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let points = || {
        series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(|&(x, y)| x > 0.0 && x.is_finite() && y.is_finite())
    };
    let x_max = points()
        .map(|(x, _)| x)
        .fold(1.0, f64::max)
        .log2()
        .ceil()
        .max(1.0);
    let y_max = round_up(points().map(|(_, y)| y).fold(0.0, f64::max));
    let (w, h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let px = |x: f64| LEFT + x.log2() / x_max * w;
    let py = |y: f64| TOP + h - y / y_max * h;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{}" y="20" text-anchor="middle" font-size="14">{}</text>"#,
        WIDTH / 2.0,
        escape(title)
    );
    // Axes, ticks and grid.
    let _ = writeln!(
        out,
        r#"<path d="M{LEFT},{TOP} V{} H{}" fill="none" stroke="black"/>"#,
        TOP + h,
        LEFT + w
    );
    for i in 0..=(x_max as u32) {
        let x = f64::from(1u32 << i);
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{x}</text>"#,
            px(x),
            TOP + h + 16.0
        );
    }
    for i in 0..=4 {
        let y = y_max * f64::from(i) / 4.0;
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" x2="{}" y1="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + w,
            py(y),
            py(y),
            LEFT - 6.0,
            py(y) + 4.0,
            y
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        LEFT + w / 2.0,
        HEIGHT - 12.0,
        escape(x_label)
    );
    let _ = writeln!(
        out,
        r#"<text transform="translate(16,{}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + h / 2.0,
        escape(y_label)
    );
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let path: Vec<String> = s
            .points
            .iter()
            .filter(|&&(x, y)| x > 0.0 && x.is_finite() && y.is_finite())
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        if !path.is_empty() {
            let _ = writeln!(
                out,
                r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
                path.join(" ")
            );
            for p in &path {
                let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
                let _ = writeln!(out, r#"<circle cx="{x}" cy="{y}" r="3" fill="{colour}"/>"#);
            }
        }
        let ly = TOP + 14.0 + 16.0 * i as f64;
        let _ = writeln!(
            out,
            r#"<line x1="{}" x2="{}" y1="{ly}" y2="{ly}" stroke="{colour}" stroke-width="2"/><text x="{}" y="{}">{}</text>"#,
            LEFT + w - 150.0,
            LEFT + w - 130.0,
            LEFT + w - 124.0,
            ly + 4.0,
            escape(&s.name)
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_numbers_bound_the_values() {
        assert_eq!(round_up(0.0), 1.0);
        assert_eq!(round_up(0.9), 1.0);
        assert_eq!(round_up(1.2), 2.0);
        assert_eq!(round_up(430.0), 500.0);
        assert_eq!(round_up(501.0), 1000.0);
    }

    #[test]
    fn a_plot_has_every_point_and_escapes_its_text() {
        let s = Series {
            name: String::from("a<b"),
            points: vec![(1.0, 10.0), (2.0, 20.0), (64.0, 5.0), (0.0, 1.0)],
        };
        let doc = svg("t & t", "clients", "per s", &[s]);
        assert!(doc.starts_with("<svg") && doc.ends_with("</svg>\n"));
        assert_eq!(
            doc.matches("<circle").count(),
            3,
            "the point at x = 0 is left out"
        );
        assert!(doc.contains("a&lt;b") && doc.contains("t &amp; t"));
        assert!(doc.contains(">64</text>"), "the x axis reaches 64");
    }
}
