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
