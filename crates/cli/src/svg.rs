//! SVG rendering of the Graphviz dumps of lazy IR (plan §6.4): the Dot subset that
//! `switchyard_lazy::dump_ir(.., DumpFormat::Dot)` writes is parsed back, laid out by the
//! `dagre` crate (Sugiyama: network-simplex ranks, barycenter ordering, Brandes–Köpf
//! coordinates) and written as SVG by hand: one `<g class="node">` box with its label lines
//! per IR node, one `<g class="edge">` polyline with an arrow (and its `i=`/`o=` label) per
//! operand. Nothing outside this process is needed.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};

use dagre::graph::{Graph, GraphOptions};
use dagre::{EdgeLabel, GraphLabel, LayoutOptions, NodeLabel};
use switchyard_core::{Error, Result};

/// Graphs above this many nodes are refused: the layout is superlinear (1000 random nodes
/// take ~1.3 s here) and a picture that large is not read anyway.
pub const MAX_NODES: usize = 2000;

/// A node of a dumped graph: its Dot id and label lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DotNode {
    /// `node<k>`.
    pub id: String,
    /// The label, one entry per `\n`-separated line.
    pub lines: Vec<String>,
}

/// An edge of a dumped graph: operand `from` of consumer `to`, with its label (`i=0, o=1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DotEdge {
    /// The producer's id.
    pub from: String,
    /// The consumer's id.
    pub to: String,
    /// The edge's label, empty when it has none.
    pub label: String,
}

/// A graph read from the Dot subset of the IR dumps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DotGraph {
    /// Nodes in file order.
    pub nodes: Vec<DotNode>,
    /// Edges in file order.
    pub edges: Vec<DotEdge>,
}

/// Reads a quoted Dot string starting at `s` (after the opening quote): its unescaped text
/// (`\n` as a line break) and the rest after the closing quote.
fn quoted(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &s[i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

/// The `label="..."` of an attribute list `[label="..."]` (the only attribute the dumps
/// write); `Some("")` for no list.
fn label_of(attrs: &str) -> Option<String> {
    let attrs = attrs.trim();
    if attrs.is_empty() {
        return Some(String::new());
    }
    let inner = attrs.strip_prefix('[')?.strip_suffix(']')?.trim();
    let (text, rest) = quoted(inner.strip_prefix("label=\"")?)?;
    rest.trim().is_empty().then_some(text)
}

fn is_id(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses the Dot subset the IR dumps write: `digraph NAME {`, node lines `ID [label="..."]`,
/// edge lines `ID -> ID` with an optional `[label="..."]`, `}`. Anything else is refused,
/// naming its line; an edge's endpoints must be declared nodes.
pub fn parse_dot(text: &str) -> Result<DotGraph> {
    let mut graph = DotGraph::default();
    let mut state = 0; // 0: before `digraph`, 1: inside, 2: after `}`
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let bad = || {
            Error::value(format!(
                "line {}: not part of the Dot subset of the IR dumps: {line}",
                n + 1
            ))
        };
        if line.is_empty() {
            continue;
        }
        match state {
            0 => {
                let name = line
                    .strip_prefix("digraph")
                    .and_then(|r| r.strip_suffix('{'))
                    .map(str::trim)
                    .ok_or_else(bad)?;
                if !is_id(name) {
                    return Err(bad());
                }
                state = 1;
            }
            1 if line == "}" => state = 2,
            1 => {
                let head_end = line.find('[').unwrap_or(line.len());
                let (head, attrs) = line.split_at(head_end);
                let label = label_of(attrs).ok_or_else(bad)?;
                if let Some((from, to)) = head.split_once("->") {
                    let (from, to) = (from.trim(), to.trim());
                    if !is_id(from) || !is_id(to) {
                        return Err(bad());
                    }
                    graph.edges.push(DotEdge {
                        from: from.to_string(),
                        to: to.to_string(),
                        label,
                    });
                } else {
                    let id = head.trim();
                    if !is_id(id) || attrs.trim().is_empty() {
                        return Err(bad());
                    }
                    graph.nodes.push(DotNode {
                        id: id.to_string(),
                        lines: label.split('\n').map(str::to_string).collect(),
                    });
                }
            }
            _ => return Err(bad()),
        }
    }
    if state != 2 {
        return Err(Error::value(
            "not a complete Dot graph: expected `digraph NAME {` ... `}`",
        ));
    }
    let known: std::collections::HashSet<&str> =
        graph.nodes.iter().map(|n| n.id.as_str()).collect();
    if let Some(e) = graph
        .edges
        .iter()
        .find(|e| !known.contains(e.from.as_str()) || !known.contains(e.to.as_str()))
    {
        return Err(Error::value(format!(
            "edge {} -> {} names an undeclared node",
            e.from, e.to
        )));
    }
    Ok(graph)
}

const CHAR_WIDTH: f64 = 7.0;
const LINE_HEIGHT: f64 = 14.0;
const PAD: f64 = 8.0;

fn node_size(n: &DotNode) -> (f64, f64) {
    let longest = n.lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    (
        longest as f64 * CHAR_WIDTH + 2.0 * PAD,
        n.lines.len() as f64 * LINE_HEIGHT + PAD,
    )
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// Lays `graph` out top to bottom (producers above consumers) and writes it as SVG.
pub fn render_svg(graph: &DotGraph) -> Result<String> {
    if graph.nodes.len() > MAX_NODES {
        return Err(Error::value(format!(
            "the graph has {} nodes; SVG rendering lays out at most {MAX_NODES}",
            graph.nodes.len()
        )));
    }
    let mut g: Graph<NodeLabel, EdgeLabel> = Graph::with_options(GraphOptions {
        directed: true,
        multigraph: true,
        compound: false,
    });
    for n in &graph.nodes {
        let (width, height) = node_size(n);
        g.set_node(
            n.id.clone(),
            Some(NodeLabel {
                width,
                height,
                ..NodeLabel::default()
            }),
        );
    }
    for (k, e) in graph.edges.iter().enumerate() {
        // Named, so that two operands from one producer stay two edges.
        let name = format!("e{k}");
        g.set_edge(
            e.from.clone(),
            e.to.clone(),
            Some(EdgeLabel::default()),
            Some(&name),
        );
    }
    let options = LayoutOptions {
        nodesep: 30.0,
        ranksep: 40.0,
        marginx: 10.0,
        marginy: 10.0,
        ..LayoutOptions::default()
    };
    // A young crate: a panic in it is this command's error, not a crash.
    catch_unwind(AssertUnwindSafe(|| dagre::layout(&mut g, Some(options))))
        .map_err(|_| Error::runtime("the graph layout (dagre) failed on this graph"))?;

    let (width, height) = g
        .graph_label::<GraphLabel>()
        .map_or((0.0, 0.0), |l| (l.width, l.height));
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.1} {h:.1}" font-family="monospace" font-size="12">"#,
        w = width.max(1.0),
        h = height.max(1.0)
    );
    svg.push_str(concat!(
        r#"<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse">"#,
        r##"<path d="M 0 0 L 10 5 L 0 10 z" fill="#444"/></marker></defs>"##,
        "\n"
    ));
    let centre: HashMap<&str, (f64, f64)> = graph
        .nodes
        .iter()
        .filter_map(|n| {
            let l = g.node(&n.id)?;
            Some((n.id.as_str(), (l.x?, l.y?)))
        })
        .collect();
    for (k, e) in graph.edges.iter().enumerate() {
        let name = format!("e{k}");
        let mut points: Vec<(f64, f64)> = g
            .edge(&e.from, &e.to, Some(&name))
            .map(|l| l.points.iter().map(|p| (p.x, p.y)).collect())
            .unwrap_or_default();
        if points.len() < 2 {
            points = [centre.get(e.from.as_str()), centre.get(e.to.as_str())]
                .into_iter()
                .flatten()
                .copied()
                .collect();
        }
        let list: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = write!(
            svg,
            r##"<g class="edge" id="edge{k}" data-from="{}" data-to="{}"><polyline points="{}" fill="none" stroke="#444" marker-end="url(#arrow)"/>"##,
            xml_escape(&e.from),
            xml_escape(&e.to),
            list.join(" ")
        );
        if !e.label.is_empty()
            && let Some(&(x, y)) = points.get(points.len() / 2)
        {
            let _ = write!(
                svg,
                r##"<text x="{:.1}" y="{y:.1}" fill="#666">{}</text>"##,
                x + 4.0,
                xml_escape(&e.label)
            );
        }
        svg.push_str("</g>\n");
    }
    for n in &graph.nodes {
        let Some(&(x, y)) = centre.get(n.id.as_str()) else {
            continue;
        };
        let (w, h) = node_size(n);
        let (left, top) = (x - w / 2.0, y - h / 2.0);
        let _ = write!(
            svg,
            r##"<g class="node" id="{}"><rect x="{left:.1}" y="{top:.1}" width="{w:.1}" height="{h:.1}" rx="4" fill="#f4f6fb" stroke="#335"/><text>"##,
            xml_escape(&n.id)
        );
        for (i, line) in n.lines.iter().enumerate() {
            let _ = write!(
                svg,
                r#"<tspan x="{:.1}" y="{:.1}">{}</tspan>"#,
                left + PAD,
                top + PAD / 2.0 + LINE_HEIGHT * (i as f64 + 0.8),
                xml_escape(line)
            );
        }
        svg.push_str("</text></g>\n");
    }
    svg.push_str("</svg>\n");
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_dump_subset_and_refuses_the_rest() {
        let g = parse_dot(
            "digraph G {\n  node0 [label=\"a\\nb \\\"q\\\"\"]\n  node1 [label=\"c\"]\n  node0 -> node1 [label=\"i=1\"]\n  node0 -> node1\n}\n",
        )
        .unwrap();
        assert_eq!(
            g.nodes[0].lines,
            vec!["a".to_string(), "b \"q\"".to_string()]
        );
        assert_eq!(g.edges.len(), 2);
        assert_eq!(g.edges[0].label, "i=1");
        let e = parse_dot("digraph G {\n  node0 [shape=box]\n}\n").unwrap_err();
        assert!(e.message().starts_with("line 2: "), "{e}");
        let e = parse_dot("digraph G {\n  node0 [label=\"a\"]\n  node0 -> node9\n}\n").unwrap_err();
        assert!(e.message().contains("undeclared"), "{e}");
        assert!(parse_dot("digraph G {\n").is_err());
    }

    #[test]
    fn escapes_labels_in_the_svg() {
        let g = parse_dot("digraph G {\n  node0 [label=\"x<y & z\"]\n}\n").unwrap();
        let svg = render_svg(&g).unwrap();
        assert!(svg.contains("x&lt;y &amp; z"), "{svg}");
    }
}
