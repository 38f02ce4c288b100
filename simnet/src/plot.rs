//! The run's chart: coverage over time above, each node's fetch rate below, churn events
//! marked on both as dashed vertical lines. SVG, drawn with `plotters`.

use crate::runner::RunReport;
use plotters::prelude::*;

/// Seconds each fetch-rate point averages over.
const WINDOW: usize = 5;

/// Renders the chart of `report` as an SVG document.
pub fn svg(report: &RunReport) -> Result<String, String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (1000, 720)).into_drawing_area();
        draw(&root, report).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

fn draw(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    r: &RunReport,
) -> Result<(), Box<dyn std::error::Error>> {
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(360);
    let end = r.elapsed_secs.max(1.0);
    let marks = |chart: &mut ChartContext<
        SVGBackend,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
                 ymax: f64|
     -> Result<(), Box<dyn std::error::Error>> {
        for m in &r.churn {
            let style = ShapeStyle { color: RGBColor(180, 40, 40).mix(0.7), filled: false, stroke_width: 1 };
            let dashes = (0..40).map(|i| {
                let (a, b) = (ymax * i as f64 / 40.0, ymax * (i as f64 + 0.5) / 40.0);
                PathElement::new(vec![(m.at_secs, a), (m.at_secs, b)], style)
            });
            chart.draw_series(dashes)?;
            chart.draw_series(std::iter::once(Text::new(
                m.event.clone(),
                (m.at_secs + end * 0.005, ymax * 0.97),
                ("sans-serif", 13).into_font().color(&RGBColor(150, 30, 30)),
            )))?;
        }
        Ok(())
    };

    let reachable = r.web.reachable.max(1) as f64;
    let title = format!(
        "Weft simnet: {} nodes, {} hosts, {} reachable pages — coverage {:.1}%, duplicates {:.2}%, lost {}, politeness violations {}",
        r.spec.nodes,
        r.spec.hosts,
        r.web.reachable,
        r.web.coverage * 100.0,
        r.web.duplicate_rate * 100.0,
        r.web.lost.len(),
        r.web.politeness_violations.len()
    );
    let mut chart = ChartBuilder::on(&top)
        .caption(title, ("sans-serif", 15))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..end, 0f64..105f64)?;
    chart.configure_mesh().x_desc("seconds").y_desc("coverage %").draw()?;
    chart
        .draw_series(LineSeries::new(
            r.web.coverage_over_time.iter().map(|&(s, c)| (s as f64, c as f64 * 100.0 / reachable)),
            ShapeStyle { color: BLUE.to_rgba(), filled: false, stroke_width: 2 },
        ))?
        .label("reachable pages fetched")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
    marks(&mut chart, 105.0)?;
    chart.configure_series_labels().position(SeriesLabelPosition::LowerRight).border_style(BLACK).draw()?;

    // Fetch rate per node, averaged over WINDOW seconds.
    let rates: Vec<(usize, Vec<(f64, f64)>)> = r
        .fetch_rate
        .iter()
        .map(|(node, series)| {
            let counts: Vec<usize> = series.iter().map(|&(_, c)| c).collect();
            let points = (0..counts.len())
                .step_by(WINDOW)
                .map(|i| {
                    let window = &counts[i..(i + WINDOW).min(counts.len())];
                    ((i + window.len() / 2) as f64, window.iter().sum::<usize>() as f64 / window.len() as f64)
                })
                .collect();
            (*node, points)
        })
        .collect();
    let ymax = rates.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y)).fold(1.0, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(&bottom)
        .caption("pages fetched per second, per node (5 s average)", ("sans-serif", 15))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..end, 0f64..ymax)?;
    chart.configure_mesh().x_desc("seconds").y_desc("pages/s").draw()?;
    let labelled = rates.len() <= 12;
    for (i, (node, points)) in rates.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let series = chart.draw_series(LineSeries::new(
            points.iter().copied(),
            ShapeStyle { color, filled: false, stroke_width: 1 },
        ))?;
        if labelled {
            series
                .label(format!("node {node}"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
    }
    marks(&mut chart, ymax)?;
    if labelled {
        chart.configure_series_labels().position(SeriesLabelPosition::UpperRight).border_style(BLACK).draw()?;
    }
    Ok(())
}

/// The scale simulator's curves against the network's size (log–log): per-member traffic with
/// the goals (2 KB/s mean, 20 KB/s at the 99th percentile), connections with the goal (64) and
/// the limit (256), and ring disagreement with its goal (0.1%).
pub fn scale_svg(rows: &[crate::scale::Summary]) -> Result<String, String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (1200, 420)).into_drawing_area();
        draw_scale(&root, rows).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

fn draw_scale(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    rows: &[crate::scale::Summary],
) -> Result<(), Box<dyn std::error::Error>> {
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, 3));
    let designs: Vec<String> = {
        let mut d: Vec<String> = rows.iter().map(|r| r.design.clone()).collect();
        d.dedup();
        d
    };
    let nmax = rows.iter().map(|r| r.members).max().unwrap_or(10).max(10) as f64 * 1.5;
    let nmin = rows.iter().map(|r| r.members).min().unwrap_or(10).max(2) as f64 / 1.5;
    let colors = [
        RGBColor(30, 90, 180),
        RGBColor(200, 80, 30),
        RGBColor(40, 150, 60),
        RGBColor(120, 170, 230),
        RGBColor(240, 160, 110),
        RGBColor(130, 210, 140),
    ];
    type Pick = fn(&crate::scale::Summary) -> f64;
    let panels_spec: [(&str, &str, Vec<(&str, Pick)>, Vec<(&str, f64)>); 3] = [
        (
            "traffic per member (KB/s)",
            "KB/s",
            vec![
                ("down mean", |r| r.down_mean / 1e3),
                ("down p99", |r| r.down_p99 / 1e3),
                ("up mean", |r| r.up_mean / 1e3),
            ],
            vec![("goal: mean 2", 2.0), ("goal: p99 20", 20.0)],
        ),
        (
            "connections per member",
            "connections",
            vec![("mean", |r| r.connections_mean), ("p99", |r| r.connections_p99)],
            vec![("goal 64", 64.0), ("limit 256", 256.0)],
        ),
        (
            "ring disagreement (% of hosts)",
            "%",
            vec![
                ("mean under churn", |r| 100.0 * r.disagreement_mean),
                ("after a quiet minute", |r| 100.0 * r.disagreement_quiet.unwrap_or(0.0)),
            ],
            vec![("goal 0.1%", 0.1)],
        ),
    ];
    for (panel, (title, ylabel, series, goals)) in panels.iter().zip(panels_spec) {
        let values: Vec<f64> =
            rows.iter().flat_map(|r| series.iter().map(move |(_, f)| f(r))).chain(goals.iter().map(|g| g.1)).collect();
        let ymax = values.iter().copied().fold(1e-3, f64::max) * 2.0;
        let ymin = values.iter().copied().filter(|v| *v > 0.0).fold(ymax, f64::min).max(ymax * 1e-6) / 2.0;
        let mut chart = ChartBuilder::on(panel)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d((nmin..nmax).log_scale(), (ymin..ymax).log_scale())?;
        chart.configure_mesh().x_desc("members").y_desc(ylabel).draw()?;
        for (g, (name, y)) in goals.iter().enumerate() {
            let style =
                ShapeStyle { color: RGBColor(120, 120, 120).mix(0.8), filled: false, stroke_width: 1 + g as u32 };
            chart
                .draw_series(LineSeries::new(vec![(nmin, *y), (nmax, *y)], style))?
                .label(*name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], style));
        }
        for (d, design) in designs.iter().enumerate() {
            for (s, (name, pick)) in series.iter().enumerate() {
                // Each design its own shades: the first dark and filled, the next light.
                let color = colors[(s + 3 * d) % colors.len()];
                let points: Vec<(f64, f64)> = rows
                    .iter()
                    .filter(|r| &r.design == design)
                    .map(|r| (r.members as f64, pick(r).max(ymin)))
                    .collect();
                let style = ShapeStyle { color: color.to_rgba(), filled: d == 0, stroke_width: 2 };
                chart
                    .draw_series(LineSeries::new(points.clone(), style).point_size(4))?
                    .label(format!("{design}: {name}"))
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color));
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()?;
    }
    Ok(())
}
