//! Tests of the figures.
use super::heat::cell_edges;
use super::*;

#[test]
fn renders_every_style_with_escaped_text() {
    let xs = [1.0, 2.0, 4.0];
    let svg = Figure::new("t <&>", "x (units)", "y")
        .log_x()
        .with(Series::band("band", &xs, vec![0.0, 1.0, 2.0], vec![1.0, 2.0, 3.0]))
        .with(Series::line("line", vec![(1.0, 0.5), (2.0, 1.5), (4.0, 2.5)]))
        .with(Series::dashed("dashed", vec![(1.0, 0.5), (4.0, 2.5)]))
        .with(Series::markers("pts", vec![(1.0, 0.2)]))
        .with(Series::error_bars("bars", vec![(2.0, 1.0)], vec![0.5], vec![1.5]))
        .with(Series::vline("v", 2.0))
        .with(Series::hline("h", 1.0))
        .to_svg()
        .unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("<polygon") && svg.contains("<polyline") && svg.contains("<circle"));
    assert!(svg.contains("t &lt;&amp;&gt;"));
    for name in ["band", "line", "dashed", "pts", "bars", "v", "h", "x (units)"] {
        assert!(svg.contains(&format!(">\n{name}\n<")) || svg.contains(&format!(">{name}<")), "{name}");
    }
    assert!(svg.contains(FONT_STACK));
}

#[test]
fn heat_maps_colour_every_finite_cell_and_show_their_range() {
    let (xs, ys) = ([0.0, 1.0, 2.0], [10.0, 20.0]);
    let values = vec![-2.0, 0.0, 1.0, f64::NAN, 0.5, 2.0];
    let fig = Figure::new("heat", "x", "y")
        .with(Series::heat_map("witness", &xs, &ys, values.clone(), ColorScale::Diverging))
        .with(Series::markers("centres", vec![(1.0, 15.0)]));
    let svg = fig.to_svg().unwrap();
    assert_ne!(fig.clone().equal_aspect().to_svg().unwrap(), svg, "a square plot is narrower");
    // Five finite cells plus the six legend swatches and their frame.
    assert_eq!(svg.matches("<rect").count() - 1, 5 + 6 + 1, "one white background rect");
    assert!(svg.contains("witness: \u{2212}2 to 2"));
    // The grid spans the cells' outer edges.
    assert_eq!(cell_edges(&xs), vec![-0.5, 0.5, 1.5, 2.5]);
    assert_eq!(ColorScale::Diverging.limits(&values), (-2.0, 2.0));
    assert_eq!(ColorScale::Sequential.limits(&values), (-2.0, 2.0));
    assert_eq!(ColorScale::Diverging.color(0.5), RGBColor(255, 255, 255));
    assert_eq!(ColorScale::Diverging.color(0.0), PALETTE[0]);
    assert_eq!(ColorScale::Sequential.color(0.0), RGBColor(255, 255, 255));
    assert_eq!(sig3(0.0123456), 0.0123);
    // A constant (all-zero) diverging map is white, not the negative end.
    assert_eq!(ColorScale::Diverging.color(ColorScale::position(0.0, (0.0, 0.0))), RGBColor(255, 255, 255));
    assert_eq!(grid_points(&xs, &ys)[..4], [0.0, 10.0, 1.0, 10.0], "x inner, y outer");
}

#[test]
fn heat_maps_of_the_wrong_size_are_errors_not_panics() {
    let too_many = Series::heat_map("h", &[0.0, 1.0], &[0.0], vec![1.0; 3], ColorScale::Sequential);
    let err = Figure::new("t", "x", "y").with(too_many).to_svg().unwrap_err().to_string();
    assert!(err.contains("3 values for a 2 × 1 grid"), "{err}");
    let empty = Series::heat_map("h", &[], &[0.0], vec![1.0], ColorScale::Sequential);
    assert!(Figure::new("t", "x", "y").with(empty).to_svg().is_err());
    let none = Series::heat_map("h", &[], &[], vec![], ColorScale::Diverging);
    assert!(Figure::new("t", "x", "y").with(none).to_svg().is_ok());
}

#[test]
fn ticks_are_short_round_numbers() {
    assert_eq!(fmt_tick(0.30000000000000004), "0.3");
    assert_eq!(fmt_tick(1500.0), "1500");
    assert_eq!(fmt_tick(-2.5), "\u{2212}2.5");
    assert_eq!(fmt_tick(0.0), "0");
    assert_eq!(fmt_tick(2e-5), "2e\u{2212}5");
    assert_eq!(fmt_tick(1.2e6), "1.2e6");
}

#[test]
fn long_titles_wrap_within_the_width() {
    let title = "a very long title ".repeat(8);
    let lines = wrap_title(title.trim(), TITLE_MIN, WIDTH - 2 * SIDE);
    assert_eq!(lines.len(), 2);
    assert!(text_width(&"mmmm".repeat(3), 14.0) > text_width("iiii", 14.0));
}

#[test]
fn empty_and_degenerate_data_still_draw() {
    assert!(Figure::new("empty", "x", "y").to_svg().is_ok());
    let one = Figure::new("one point", "x", "y").with(Series::markers("p", vec![(1.0, 1.0)]));
    assert!(one.to_svg().is_ok());
    let nan =
        Figure::new("nan", "x", "y").log_y().with(Series::line("l", vec![(0.0, f64::NAN), (1.0, -1.0)]));
    assert!(nan.to_svg().is_ok());
}
