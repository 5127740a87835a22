//! The IR: post-order (L17), hashes that leave data out, shapes, node text, deep graphs.

use std::sync::Arc;

use smallvec::smallvec;
use switchyard_core::{Result, ScalarType, Tensor};
use switchyard_lazy::data::DeviceData;
use switchyard_lazy::ir::{Arg, ArgKind, Hash128, Node, NodeInfo, Output, Shape, post_order};
use switchyard_lazy::trace::LowerArgs;

fn no_lowering(_: &LowerArgs<'_>) -> Result<Vec<Tensor>> {
    Ok(Vec::new())
}

static UNARY: NodeInfo = NodeInfo {
    qualified: "test::unary",
    overload: "",
    class: "Unary",
    op_hash: Hash128::of_str("test::unary"),
    arg_names: &["self", "other"],
    arg_kinds: &[ArgKind::Tensor, ArgKind::Tensor],
    num_outputs: 1,
    random: false,
    lower: no_lowering,
};

fn leaf(sizes: &[i64]) -> Arc<Node> {
    let t = Tensor::from_vec(vec![0.0f32; sizes.iter().product::<i64>() as usize], sizes).unwrap();
    Arc::new(Node::device_data(DeviceData::from_tensor(t)))
}

fn node(operands: &[&Arc<Node>]) -> Arc<Node> {
    let ops = operands
        .iter()
        .map(|n| Output {
            node: Arc::clone(n),
            index: 0,
        })
        .collect();
    let args = (0..operands.len() as u32).map(Arg::Operand).collect();
    Arc::new(Node::new(
        &UNARY,
        ops,
        args,
        smallvec![Shape::contiguous(ScalarType::Float, &[2])],
    ))
}

#[test]
fn post_order_of_a_diamond() {
    // a → {b, c}, b → d, c → d, rooted at a: d, b, c, a (operands in order, d once).
    let d = leaf(&[2]);
    let b = node(&[&d]);
    let c = node(&[&d]);
    let a = node(&[&b, &c]);
    let order = post_order(&[&a]).unwrap();
    let pos = |n: &Arc<Node>| order.iter().position(|o| Arc::ptr_eq(o, n)).unwrap();
    assert_eq!(order.len(), 4);
    assert!(pos(&d) < pos(&b) && pos(&b) < pos(&c) && pos(&c) < pos(&a));
    // Two roots sharing the subgraph emit it once.
    assert_eq!(post_order(&[&b, &c]).unwrap().len(), 3);
}

#[test]
fn hashes_leave_data_out_and_keep_structure() {
    // Two leaves of one shape hash equal whatever their data; another shape does not.
    let t1 = Tensor::from_slice(&[1.0f32, 2.0]).unwrap();
    let t2 = Tensor::from_slice(&[3.0f32, 4.0]).unwrap();
    let l1 = Arc::new(Node::device_data(DeviceData::from_tensor(t1)));
    let l2 = Arc::new(Node::device_data(DeviceData::from_tensor(t2)));
    assert_eq!(l1.hash, l2.hash);
    assert_ne!(leaf(&[3]).hash, l1.hash);
    assert_ne!(leaf(&[1, 2]).hash, l1.hash);
    // Interior nodes: operand order matters.
    assert_eq!(
        node(&[&l1, &leaf(&[3])]).hash,
        node(&[&l2, &leaf(&[3])]).hash
    );
    assert_ne!(
        node(&[&l1, &leaf(&[3])]).hash,
        node(&[&leaf(&[3]), &l1]).hash
    );
    // Strides are part of a leaf's shape.
    let t = Tensor::from_vec(vec![0.0f32; 6], &[2, 3]).unwrap();
    let tt = switchyard_ops::op::t::call(&t).unwrap();
    let c = switchyard_ops::op::clone::call(&tt, Some(switchyard_core::MemoryFormat::Contiguous))
        .unwrap();
    assert_ne!(Shape::of(&c).hash(), Shape::of(&tt).hash());
}

#[test]
fn node_text_and_shapes() {
    let s = Shape::contiguous(ScalarType::Float, &[2, 3]);
    assert_eq!(s.to_string(), "Float[2,3]");
    assert_eq!(&s.strides[..], &[3, 1]);
    let l = leaf(&[2, 3]);
    assert_eq!(
        l.text(),
        "[Float[2,3]] lazy_tensors::device_data, device=lazy:0"
    );
    let n = node(&[&l]);
    assert_eq!(n.text(), "[Float[2]] test::unary");
}

#[test]
fn deep_chains_drop_without_recursion() {
    let mut n = leaf(&[2]);
    for _ in 0..200_000 {
        n = node(&[&n]);
    }
    assert_eq!(n.operands.len(), 1);
    drop(n);
}
