//! Clipping lines to a fixed y range (a zoomed figure) and the SVG attributes the report's check reads.

/// Splits the polyline `pts` into the runs that lie inside `[lo, hi]` in y, each cut where it crosses
/// the range's edge (linear interpolation), so a curve that dives out of a zoomed range stops at the
/// frame instead of being drawn outside the plot.
pub(super) fn clip_polyline(pts: &[(f64, f64)], lo: f64, hi: f64) -> Vec<Vec<(f64, f64)>> {
    let inside = |p: &(f64, f64)| p.1 >= lo && p.1 <= hi;
    // The point where the segment a → b crosses the edge `y`.
    let cross = |a: (f64, f64), b: (f64, f64), y: f64| (a.0 + (b.0 - a.0) * (y - a.1) / (b.1 - a.1), y);
    let edge = |p: &(f64, f64)| if p.1 < lo { lo } else { hi };
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut run: Vec<(f64, f64)> = Vec::new();
    for (i, p) in pts.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| pts[j]);
        match (prev, inside(p)) {
            (Some(q), true) if !inside(&q) => run.push(cross(q, *p, edge(&q))),
            (Some(q), false) if inside(&q) => {
                run.push(cross(q, *p, edge(p)));
                runs.push(std::mem::take(&mut run));
            }
            _ => {}
        }
        if inside(p) {
            run.push(*p);
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    runs
}

/// A bound as the check reads it: a number, `inf` or `-inf`.
fn bound(v: f64) -> String {
    if v.is_infinite() { if v > 0.0 { "inf".into() } else { "-inf".into() } } else { format!("{v}") }
}

/// Adds the declarations of a figure's focus range (`focus_y`, on the `<svg>`) and of its bands'
/// supports (`supports`, one per band in series order, on each band's `<polygon>`; bands are the only
/// series drawn as polygons).
pub(super) fn annotate(
    mut svg: String,
    focus_y: Option<(f64, f64)>,
    supports: &[Option<(f64, f64)>],
) -> String {
    if let (Some((lo, hi)), Some(at)) = (focus_y, svg.find("<svg")) {
        svg.insert_str(at + 4, &format!(" data-focus-y=\"{} {}\"", bound(lo), bound(hi)));
    }
    let mut from = 0;
    for support in supports {
        let Some(at) = svg[from..].find("<polygon").map(|i| from + i + "<polygon".len()) else { break };
        if let Some((lo, hi)) = support {
            svg.insert_str(at, &format!(" data-support=\"{} {}\"", bound(*lo), bound(*hi)));
        }
        from = at;
    }
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_at_the_range_edges() {
        let pts = [(0.0, 0.0), (1.0, 2.0), (2.0, 0.0), (3.0, -2.0), (4.0, 0.0)];
        let runs = clip_polyline(&pts, -1.0, 1.0);
        assert_eq!(runs.len(), 3, "{runs:?}");
        assert_eq!(runs[0], vec![(0.0, 0.0), (0.5, 1.0)]);
        assert_eq!(runs[1], vec![(1.5, 1.0), (2.0, 0.0), (2.5, -1.0)]);
        assert_eq!(runs[2], vec![(3.5, -1.0), (4.0, 0.0)]);
        assert!(clip_polyline(&[(0.0, 5.0), (1.0, 6.0)], 0.0, 1.0).is_empty());
    }

    #[test]
    fn supports_and_focus_are_declared_on_the_svg() {
        let svg = "<svg w=\"1\"><polygon p=\"a\"/><polygon p=\"b\"/></svg>".to_string();
        let svg = annotate(svg, Some((0.0, 2.0)), &[None, Some((0.0, f64::INFINITY))]);
        assert!(svg.starts_with("<svg data-focus-y=\"0 2\""), "{svg}");
        let polygons: Vec<&str> = svg.split("<polygon").skip(1).collect();
        assert_eq!(polygons.len(), 2);
        assert!(
            !polygons[0].starts_with(" data-support") && polygons[1].starts_with(" data-support=\"0 inf\""),
            "{svg}"
        );
    }
}
