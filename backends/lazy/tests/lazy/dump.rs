//! IR dumps (B.13) against the layout PyTorch's LTC prints for the same program
//! (`torch._lazy.debug.dump_ir([c, a + b], "text")` and `render_ir_graph([c])` with
//! `c = (a * b).sum(1)`): post-order numbering, `%id` operands, attributes, `ROOT=i`,
//! `NodeType=`; Graphviz boxes and edges labelled `i=` for multi-operand consumers. (LTC
//! expands its scalar device data and spells lists `2 3`; our scalars are parameters of their
//! own shape and lists print as `[1]`.)

use switchyard_lazy::{DumpFormat, dump_ir};
use switchyard_ops::{TensorOps, op};

use crate::support::{counter, sample, setup};

#[test]
fn text_and_dot_dumps() {
    let _g = setup();
    let a = switchyard_lazy::to_lazy(&sample(&[2, 3], 301)).unwrap();
    let b = switchyard_lazy::to_lazy(&sample(&[2, 3], 302)).unwrap();
    let c = op::sum_dim_IntList::call(&a.mul(&b).unwrap(), Some(&[1]), false, None).unwrap();
    let d = a.add(&b).unwrap();
    let text = dump_ir(&[Clone::clone(&c), Clone::clone(&d)], DumpFormat::Text).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.first(), Some(&"IR {"), "{text}");
    assert_eq!(lines.last(), Some(&"}"), "{text}");
    assert_eq!(
        lines[1],
        "  %0 = [Float[2,3]] lazy_tensors::device_data(), device=lazy:0, NodeType=torch::lazy::DeviceData"
    );
    assert_eq!(
        lines[3],
        "  %2 = [Float[2,3]] aten::mul(%0, %1), NodeType=torch::lazy::MulTensor"
    );
    assert_eq!(
        lines[4],
        "  %3 = [Float[2]] aten::sum(%2), dim=[1], keepdim=0, dtype=null, ROOT=0, NodeType=torch::lazy::SumDimIntlist"
    );
    assert_eq!(
        lines[6],
        "  %5 = [Float[2,3]] aten::add(%0, %1, %4), ROOT=1, NodeType=torch::lazy::AddTensor"
    );
    assert_eq!(lines.len(), 8, "{text}");

    let dot = dump_ir(&[Clone::clone(&c)], DumpFormat::Dot).unwrap();
    let want = "digraph G {\n  node0 [label=\"lazy_tensors::device_data\\nFloat[2,3]\\ndevice=lazy:0\"]\n  node1 [label=\"lazy_tensors::device_data\\nFloat[2,3]\\ndevice=lazy:0\"]\n  node2 [label=\"aten::mul\\nFloat[2,3]\"]\n  node3 [label=\"aten::sum\\nFloat[2]\\ndim=[1]\\nkeepdim=0\\ndtype=null\\nROOT=0\"]\n  node2 -> node3\n  node0 -> node2 [label=\"i=0\"]\n  node1 -> node2 [label=\"i=1\"]\n}\n";
    assert_eq!(dot, want);

    // Dumping computed nothing; the graph still runs.
    assert_eq!(counter("UncachedCompile"), 0);
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(counter("UncachedCompile"), 1);
    // A synced tensor dumps as its data.
    let after = dump_ir(&[c], DumpFormat::Text).unwrap();
    assert_eq!(
        after,
        "IR {\n  %0 = [Float[2]] lazy_tensors::device_data(), device=lazy:0, ROOT=0, NodeType=torch::lazy::DeviceData\n}\n"
    );
}

/// Multi-output producers are referenced as `%id.index` and their edges carry `o=`.
#[test]
fn multi_output_operands() {
    let _g = setup();
    let m = switchyard_lazy::to_lazy(&sample(&[3, 4], 303)).unwrap();
    let (values, _indices) = op::max_dim::call(&m, 1, false).unwrap();
    let r = values.neg().unwrap();
    let text = dump_ir(&[Clone::clone(&r)], DumpFormat::Text).unwrap();
    assert!(
        text.contains("aten::max(%0), num_outputs=2, dim=1, keepdim=0"),
        "{text}"
    );
    assert!(text.contains("aten::neg(%1.0), ROOT=0"), "{text}");
    let dot = dump_ir(&[r], DumpFormat::Dot).unwrap();
    assert!(dot.contains("node1 -> node2 [label=\"o=0\"]"), "{dot}");
}
