//! SVG drawings of causal graphs: the nodes on a circle, directed edges as arrows, undirected edges
//! as plain lines; several graphs over the same nodes side by side (one panel each). No
//! dependencies, so the CLI and the reproductions draw the same picture.

use super::graph::Pdag;
use std::fmt::Write as _;

const PANEL: f64 = 420.0;
const HEADER: f64 = 40.0;
const NODE_RX: f64 = 38.0;
const NODE_RY: f64 = 16.0;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Node `k` of `n` on the circle of a panel starting at `x0`.
fn position(k: usize, n: usize, x0: f64) -> (f64, f64) {
    let r = PANEL / 2.0 - 60.0;
    let t = -std::f64::consts::FRAC_PI_2 + 2.0 * std::f64::consts::PI * k as f64 / n.max(1) as f64;
    (x0 + PANEL / 2.0 + r * t.cos(), HEADER + PANEL / 2.0 + r * t.sin())
}

/// Where the segment from the centre of an ellipse towards `(dx, dy)` leaves it.
fn ellipse_exit(dx: f64, dy: f64) -> f64 {
    let len = (dx * dx + dy * dy).sqrt().max(1e-9);
    let (ux, uy) = (dx / len, dy / len);
    1.0 / ((ux / NODE_RX).powi(2) + (uy / NODE_RY).powi(2)).sqrt()
}

/// One SVG with a panel per `(title, graph)`; every graph is over the nodes `names`. Edges listed
/// in `highlight` (as `(from, to)`, either direction) are drawn thicker in red. A diagram has no
/// axes: `data-axes="none"` tells the report's browser check not to look for tick labels.
pub fn graph_svg(names: &[String], panels: &[(&str, &Pdag)], highlight: &[(usize, usize)]) -> String {
    let width = PANEL * panels.len().max(1) as f64;
    let height = PANEL + HEADER;
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" data-axes="none">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#333"/></marker>
<marker id="arrow-hl" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#d62728"/></marker></defs>
<rect width="{width}" height="{height}" fill="white"/>
"##
    );
    let n = names.len();
    for (p, (title, g)) in panels.iter().enumerate() {
        let x0 = PANEL * p as f64;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="26" text-anchor="middle" font-size="16">{}</text>"#,
            x0 + PANEL / 2.0,
            escape(title)
        );
        for (a, b, directed) in g.edges() {
            let ((xa, ya), (xb, yb)) = (position(a, n, x0), position(b, n, x0));
            let (dx, dy) = (xb - xa, yb - ya);
            let len = (dx * dx + dy * dy).sqrt().max(1e-9);
            let (sa, sb) = (ellipse_exit(dx, dy), ellipse_exit(-dx, -dy) + if directed { 3.0 } else { 0.0 });
            let (x1, y1) = (xa + dx * sa / len, ya + dy * sa / len);
            let (x2, y2) = (xb - dx * sb / len, yb - dy * sb / len);
            let hl = highlight.iter().any(|&(u, v)| (u, v) == (a, b) || (u, v) == (b, a));
            let (colour, w, marker) = if hl { ("#d62728", 3.0, "arrow-hl") } else { ("#333", 1.6, "arrow") };
            let head = if directed { format!(r#" marker-end="url(#{marker})""#) } else { String::new() };
            let _ = writeln!(
                s,
                r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{colour}" stroke-width="{w}"{head}/>"#
            );
        }
        for (k, name) in names.iter().enumerate() {
            let (x, y) = position(k, n, x0);
            let _ = writeln!(
                s,
                r##"<ellipse cx="{x:.1}" cy="{y:.1}" rx="{NODE_RX}" ry="{NODE_RY}" fill="#eef3fb" stroke="#1f77b4"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="13">{}</text>"##,
                y + 4.5,
                escape(name)
            );
        }
    }
    let _ = write!(
        s,
        r##"<text x="8" y="{}" font-size="11" fill="#555">arrows: oriented edges; plain lines: edges the algorithm left unoriented</text>
</svg>
"##,
        height - 8.0
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_every_node_and_edge() {
        let names: Vec<String> = ["temp", "O3", "a<b"].map(String::from).to_vec();
        let mut g = Pdag::empty(3);
        g.add_directed(0, 1);
        g.add_undirected(1, 2);
        let svg = graph_svg(&names, &[("BKL", &g), ("median", &Pdag::empty(3))], &[(1, 0)]);
        assert_eq!(svg.matches("<ellipse").count(), 6);
        assert_eq!(svg.matches("<line").count(), 2);
        assert_eq!(svg.matches("marker-end=\"url(#arrow-hl)\"").count(), 1);
        assert!(svg.contains("a&lt;b") && svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    }
}
