//! Element-wise fusion (plan §5.3): trees of element-wise nodes become one
//! `switchyard_cpu::fused` loop.
//!
//! A node is fusible when the engine knows its operator, it computes in `Float` or `Double`
//! (its output's dtype: these operators compute in their output dtype), its output is
//! contiguous with at least one dimension, and each tensor operand is either 0-dim (read as a
//! scalar, as eager's type promotion does) or of the output's dtype. A fusible node is inlined
//! into its consumer when it is not a root, every use is by that one consumer, the consumer is
//! fusible and both have the same sizes (nothing is computed twice). What is left is a forest:
//! each tree is a group, its root node the group's tail and only output. Operands of members
//! from outside the group are the kernel's inputs (strided and broadcast loads, scalars).

use std::collections::HashMap;
use std::sync::Arc;

use switchyard_core::shape::contiguous_strides;
use switchyard_core::{Error, Result};
use switchyard_cpu::fused::{BinaryOp, FusedBuilder, FusedKernel, UnaryOp, Value, supports_dtype};

use crate::ir::{Arg, Attr, Node, NodeInfo, OpKind};

/// What a fusible operator computes.
#[derive(Clone, Copy)]
enum Kind {
    Unary(UnaryOp),
    Binary(BinaryOp),
    /// `add` / `sub` (`.Tensor` or `.Scalar`: `self`, `other`, `alpha`).
    Add {
        negate: bool,
    },
    /// `where.self(le.Scalar(r, t), v, g)` with `v` 0-dim: ReLU's backward, the `le` node
    /// absorbed (see [`where_le_mask`]).
    WhereLe,
}

fn kind(info: &NodeInfo) -> Option<Kind> {
    Some(match (info.qualified, info.overload) {
        // The `.Scalar` overloads carry `other` as a lifted 0-dim parameter, the operand a
        // wrapped number of the `.Tensor` overload becomes: the same operation.
        ("aten::add", "Tensor" | "Scalar") => Kind::Add { negate: false },
        ("aten::sub", "Tensor" | "Scalar") => Kind::Add { negate: true },
        ("aten::mul", "Tensor" | "Scalar") => Kind::Binary(BinaryOp::Mul),
        ("aten::div", "Tensor" | "Scalar") => Kind::Binary(BinaryOp::Div),
        ("aten::maximum", "") => Kind::Binary(BinaryOp::Maximum),
        ("aten::neg", "") => Kind::Unary(UnaryOp::Neg),
        ("aten::exp", "") => Kind::Unary(UnaryOp::Exp),
        ("aten::log", "") => Kind::Unary(UnaryOp::Log),
        ("aten::sin", "") => Kind::Unary(UnaryOp::Sin),
        ("aten::tanh", "") => Kind::Unary(UnaryOp::Tanh),
        ("aten::sigmoid", "") => Kind::Unary(UnaryOp::Sigmoid),
        ("aten::sqrt", "") => Kind::Unary(UnaryOp::Sqrt),
        ("aten::relu", "") => Kind::Unary(UnaryOp::Relu),
        ("aten::where", "self") => Kind::WhereLe,
        _ => return None,
    })
}

/// A fusion group: its members in creation order, the tail last.
pub(super) struct Group {
    pub members: Vec<usize>,
}

/// The groups of a graph: `member_of[i]` is the tail of a non-tail member `i` (or the
/// softmax node a group's tail feeds, §5.5); `rows[s] = (t, log)`: softmax node `s` runs the
/// group of tail `t` as its prologue.
pub(super) struct Groups {
    pub member_of: Vec<Option<usize>>,
    pub tail_of: HashMap<usize, Group>,
    pub rows: HashMap<usize, (usize, bool)>,
}

type Operands = [smallvec::SmallVec<[(usize, usize); 3]>];

/// The `le.Scalar` node producing the mask of `where.self` node `w`, if `w` is ReLU's backward
/// in a form the engine runs exactly: the mask is `le.Scalar(r, t)` with `r` of `w`'s dtype and
/// sizes and `t` a scalar, used by `w` alone and not a root; `w`'s `self` is 0-dim (a scalar).
fn where_le_mask(
    order: &[Arc<Node>],
    operands: &Operands,
    uses: &[smallvec::SmallVec<[usize; 2]>],
    is_root: &[bool],
    w: usize,
) -> Option<usize> {
    let &[(m, 0), (v, vi), _] = operands[w].as_slice() else {
        return None;
    };
    let OpKind::Aten(info) = &order[m].kind else {
        return None;
    };
    if (info.qualified, info.overload) != ("aten::le", "Scalar")
        || is_root[m]
        || !uses[m].iter().all(|&u| u == w)
        || !order[v].shapes.get(vi)?.sizes.is_empty()
    {
        return None;
    }
    let &[(r, ri), (t, ti)] = operands[m].as_slice() else {
        return None;
    };
    let (rs, ws) = (order[r].shapes.get(ri)?, &order[w].shapes[0]);
    (rs.dtype == ws.dtype && rs.sizes == ws.sizes && order[t].shapes.get(ti)?.sizes.is_empty())
        .then_some(m)
}

fn fusible(order: &[Arc<Node>], operands: &Operands, i: usize) -> bool {
    let nd = &order[i];
    let OpKind::Aten(info) = &nd.kind else {
        return false;
    };
    let Some(k) = kind(info) else { return false };
    let [shape] = nd.shapes.as_slice() else {
        return false;
    };
    if !supports_dtype(shape.dtype)
        || shape.sizes.is_empty()
        || shape.strides != contiguous_strides(&shape.sizes)
    {
        return false;
    }
    let expected = match k {
        Kind::Unary(_) => 1,
        Kind::Binary(_) => 2,
        Kind::Add { .. } | Kind::WhereLe => 3,
    };
    if operands[i].len() != expected {
        return false;
    }
    operands[i].iter().enumerate().all(|(pos, &(id, idx))| {
        let Some(s) = order[id].shapes.get(idx) else {
            return false;
        };
        if matches!(k, Kind::WhereLe) && pos < 2 {
            return true; // the mask and the scalar value: `where_le_mask` checks them
        }
        if matches!(k, Kind::Add { .. }) && pos == 2 {
            return s.sizes.is_empty(); // alpha
        }
        s.sizes.is_empty() || (s.dtype == shape.dtype && s.sizes.len() <= shape.sizes.len())
    })
}

/// Chooses the groups among the live representative nodes.
pub(super) fn plan(
    order: &[Arc<Node>],
    operands: &Operands,
    live: &[bool],
    rep: &[usize],
    uses: &[smallvec::SmallVec<[usize; 2]>],
    is_root: &[bool],
) -> Groups {
    let n = order.len();
    let mut ok: Vec<bool> = (0..n)
        .map(|i| live[i] && rep[i] == i && fusible(order, operands, i))
        .collect();
    // ReLU's backward: the `where` runs fused (absorbing its `le` mask) or not at all.
    let mut masks: Vec<(usize, usize)> = Vec::new();
    for (w, okw) in ok.iter_mut().enumerate() {
        if !*okw || !is_where(&order[w]) {
            continue;
        }
        match where_le_mask(order, operands, uses, is_root, w) {
            Some(m) => masks.push((m, w)),
            None => *okw = false,
        }
    }
    let mut parent: Vec<Option<usize>> = vec![None; n];
    for i in 0..n {
        if !ok[i] || is_root[i] || uses[i].is_empty() {
            continue;
        }
        let c = uses[i][0];
        if uses[i].iter().all(|&u| u == c)
            && ok[c]
            && order[c].shapes[0].sizes == order[i].shapes[0].sizes
            && order[c].shapes[0].dtype == order[i].shapes[0].dtype
        {
            parent[i] = Some(c);
        }
    }
    // Tails by following parents; a consumer comes after its operands, so walking the
    // post-order backwards sees a parent before its children.
    let mut tail = vec![usize::MAX; n];
    let mut member_of = vec![None; n];
    let mut tail_of: HashMap<usize, Group> = HashMap::new();
    for i in (0..n).rev() {
        if !ok[i] {
            continue;
        }
        tail[i] = match parent[i] {
            Some(p) => tail[p],
            None => i,
        };
        if tail[i] != i {
            member_of[i] = Some(tail[i]);
        }
        tail_of
            .entry(tail[i])
            .or_insert_with(|| Group {
                members: Vec::new(),
            })
            .members
            .push(i);
    }
    for g in tail_of.values_mut() {
        g.members.sort_by_key(|&m| order[m].seq);
    }
    // An absorbed mask is computed inside its `where`'s group: never scheduled itself.
    for (m, w) in masks {
        member_of[m] = Some(tail[w]);
    }
    // Producers fused into softmax / log_softmax over the last dimension (plan §5.5): the
    // group's result is only read by the softmax, row by row.
    let mut rows = HashMap::new();
    for s in 0..n {
        if !live[s] || rep[s] != s {
            continue;
        }
        let OpKind::Aten(info) = &order[s].kind else {
            continue;
        };
        let log = match (info.qualified, info.overload) {
            ("aten::_softmax", "") => false,
            ("aten::_log_softmax", "") => true,
            _ => continue,
        };
        let Some(&(t, 0)) = operands[s].first() else {
            continue;
        };
        if !tail_of.contains_key(&t) || is_root[t] || !uses[t].iter().all(|&u| u == s) {
            continue;
        }
        let (ts, ss) = (&order[t].shapes[0], &order[s].shapes[0]);
        let ndim = ts.sizes.len() as i64;
        let last = match order[s].args.get(1) {
            Some(Arg::Attr(Attr::Int(d))) => *d == ndim - 1 || *d == -1,
            _ => false,
        };
        let half_to_float = !matches!(order[s].args.get(2), Some(Arg::Attr(Attr::Bool(false))));
        if last
            && !half_to_float
            && ss.sizes == ts.sizes
            && ss.dtype == ts.dtype
            && ss.strides == contiguous_strides(&ss.sizes)
        {
            rows.insert(s, (t, log));
            member_of[t] = Some(s);
        }
    }
    Groups {
        member_of,
        tail_of,
        rows,
    }
}

fn is_where(nd: &Node) -> bool {
    matches!(&nd.kind, OpKind::Aten(info) if (info.qualified, info.overload) == ("aten::where", "self"))
}

/// The kernel of group `g` and its inputs (node outputs from outside the group, in the
/// kernel's input order).
pub(super) fn build(
    order: &[Arc<Node>],
    operands: &Operands,
    g: &Group,
) -> Result<(FusedKernel, Vec<(usize, usize)>)> {
    let tail = *g
        .members
        .last()
        .ok_or_else(|| Error::runtime("internal error: an empty fusion group"))?;
    let shape = &order[tail].shapes[0];
    let mut b = FusedBuilder::new(shape.dtype, &shape.sizes)?;
    let mut value_of: HashMap<usize, Value> = HashMap::new();
    let mut inputs: Vec<(usize, usize)> = Vec::new();
    let mut input_of: HashMap<(usize, usize), Value> = HashMap::new();
    for &m in &g.members {
        let OpKind::Aten(info) = &order[m].kind else {
            return Err(Error::runtime("internal error: a fused parameter"));
        };
        let k = kind(info).ok_or_else(|| Error::runtime("internal error: not fusible"))?;
        // A fused `where`'s operands are its mask's (`r`, `t`) and its own (`v`, `g`).
        let ops: smallvec::SmallVec<[(usize, usize); 4]> = match k {
            Kind::WhereLe => {
                let (mask, v, g) = (operands[m][0].0, operands[m][1], operands[m][2]);
                let (r, t) = (operands[mask][0], operands[mask][1]);
                smallvec::smallvec![r, g, t, v]
            }
            _ => operands[m].iter().copied().collect(),
        };
        let mut vals: smallvec::SmallVec<[Value; 4]> = smallvec::SmallVec::new();
        for &(id, idx) in &ops {
            let v = match value_of.get(&id) {
                Some(v) if g.members.contains(&id) => *v,
                _ => match input_of.get(&(id, idx)) {
                    Some(v) => *v,
                    None => {
                        let v = b.input()?;
                        input_of.insert((id, idx), v);
                        inputs.push((id, idx));
                        v
                    }
                },
            };
            vals.push(v);
        }
        let v = match k {
            Kind::Unary(f) => b.unary(f, vals[0])?,
            Kind::Binary(f) => b.binary(f, vals[0], vals[1])?,
            Kind::Add { negate } => b.add(vals[0], vals[1], vals[2], negate)?,
            Kind::WhereLe => b.where_le(vals[0], vals[1], vals[2], vals[3])?,
        };
        value_of.insert(m, v);
    }
    let result = value_of
        .get(&tail)
        .copied()
        .ok_or_else(|| Error::runtime("internal error: fusion group without result"))?;
    Ok((b.finish(result)?, inputs))
}
