//! Layers: PyTorch's parameter names, shapes, default initialisation bounds, printing, and
//! state_dict round trips.

use switchyard_autograd::AutogradTensor;
use switchyard_core::Tensor;
use switchyard_nn::{
    Conv2d, Conv2dOptions, Dropout, Embedding, LayerNorm, Linear, Module, ReLU, Sequential,
};

fn max_abs(t: &Tensor) -> f64 {
    t.to_f64_vec()
        .unwrap()
        .iter()
        .fold(0.0f64, |m, v| m.max(v.abs()))
}

#[test]
fn linear_initialisation_and_names() {
    switchyard_core::generator::manual_seed(0).unwrap();
    let l = Linear::new(400, 30, true).unwrap();
    let names: Vec<String> = l.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["weight", "bias"]);
    assert_eq!(l.weight.sizes().as_slice(), &[30, 400]);
    assert!(l.weight.requires_grad() && l.weight.is_leaf());
    // kaiming_uniform_(a=√5) and the bias both draw from U(-1/√fan_in, 1/√fan_in).
    let bound = 1.0 / 400f64.sqrt();
    assert!(max_abs(&l.weight) <= bound && max_abs(&l.weight) > 0.9 * bound);
    assert!(max_abs(l.bias.as_ref().unwrap()) <= bound);
    assert_eq!(
        l.describe(),
        "Linear(in_features=400, out_features=30, bias=True)"
    );
}

#[test]
fn conv_layer_norm_embedding() {
    let c = Conv2d::new(
        3,
        8,
        [3, 3],
        Conv2dOptions {
            padding: [1, 1],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(c.weight.sizes().as_slice(), &[8, 3, 3, 3]);
    assert!(max_abs(&c.weight) <= 1.0 / 27f64.sqrt());
    assert_eq!(
        c.describe(),
        "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"
    );
    let ln = LayerNorm::new(&[6], 1e-5, true).unwrap();
    assert_eq!(
        ln.weight.as_ref().unwrap().to_vec::<f32>().unwrap(),
        vec![1.0; 6]
    );
    assert_eq!(
        ln.describe(),
        "LayerNorm((6,), eps=1e-05, elementwise_affine=True)"
    );
    let e = Embedding::new(10, 4, Some(2)).unwrap();
    let row = e.weight.to_vec::<f32>().unwrap();
    assert_eq!(&row[8..12], &[0.0; 4]);
    assert_eq!(e.describe(), "Embedding(10, 4, padding_idx=2)");
    assert_eq!(
        Dropout::new(1.5).err().unwrap().message(),
        "dropout probability has to be between 0 and 1, but got 1.5"
    );
}

#[test]
fn sequential_state_dict_round_trip() {
    let a = Sequential::new(vec![
        Box::new(Linear::new(4, 3, true).unwrap()),
        Box::new(ReLU),
        Box::new(Linear::new(3, 2, false).unwrap()),
    ]);
    let names: Vec<String> = a.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["0.weight", "0.bias", "2.weight"]);
    let b = Sequential::new(vec![
        Box::new(Linear::new(4, 3, true).unwrap()),
        Box::new(ReLU),
        Box::new(Linear::new(3, 2, false).unwrap()),
    ]);
    b.load_state_dict(&a.state_dict().unwrap()).unwrap();
    for (x, y) in a.parameters().iter().zip(b.parameters()) {
        assert_eq!(x.to_vec::<f32>().unwrap(), y.to_vec::<f32>().unwrap());
    }
    // Loading is not recorded by autograd: parameters stay leaves.
    assert!(b.parameters().iter().all(|p| p.is_leaf()));
    let mut partial = a.state_dict().unwrap();
    partial.pop();
    let err = b.load_state_dict(&partial).unwrap_err();
    assert_eq!(
        err.message(),
        "Error(s) in loading state_dict for Sequential:\n\tMissing key(s) in state_dict: \"2.weight\". "
    );
}
