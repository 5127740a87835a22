//! Weights as safetensors files (the `safetensors` crate): what `save_file` writes here,
//! PyTorch's `safetensors.torch.load_file` reads, and the other way round.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use safetensors::tensor::{Dtype, SafeTensors, TensorView, View};
use switchyard_core::shape::contiguous_strides;
use switchyard_core::storage::Storage;
use switchyard_core::{Access, Error, MemoryFormat, Result, ScalarType, Tensor, with_tensors};
use switchyard_ops::op;

fn to_dtype(t: ScalarType) -> Dtype {
    match t {
        ScalarType::Bool => Dtype::BOOL,
        ScalarType::Byte => Dtype::U8,
        ScalarType::Char => Dtype::I8,
        ScalarType::Short => Dtype::I16,
        ScalarType::Int => Dtype::I32,
        ScalarType::Long => Dtype::I64,
        ScalarType::Half => Dtype::F16,
        ScalarType::BFloat16 => Dtype::BF16,
        ScalarType::Float => Dtype::F32,
        ScalarType::Double => Dtype::F64,
    }
}

fn from_dtype(d: Dtype) -> Result<ScalarType> {
    Ok(match d {
        Dtype::BOOL => ScalarType::Bool,
        Dtype::U8 => ScalarType::Byte,
        Dtype::I8 => ScalarType::Char,
        Dtype::I16 => ScalarType::Short,
        Dtype::I32 => ScalarType::Int,
        Dtype::I64 => ScalarType::Long,
        Dtype::F16 => ScalarType::Half,
        Dtype::BF16 => ScalarType::BFloat16,
        Dtype::F32 => ScalarType::Float,
        Dtype::F64 => ScalarType::Double,
        other => {
            return Err(Error::type_error(format!(
                "safetensors: dtype {other:?} is not supported"
            )));
        }
    })
}

/// A tensor's bytes, row-major (little-endian, as on every host switchyard runs on).
struct Bytes {
    dtype: ScalarType,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl View for &Bytes {
    fn dtype(&self) -> Dtype {
        to_dtype(self.dtype)
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

fn bytes_of(t: &Tensor) -> Result<Bytes> {
    let cpu = if t.is_cpu() {
        t.clone()
    } else {
        op::_to_copy::call(
            t,
            None,
            None,
            Some(switchyard_core::Device::CPU),
            None,
            false,
            None,
        )?
    };
    let c = op::contiguous::call(&cpu, MemoryFormat::Contiguous)?;
    let elem = c.element_size();
    let start = usize::try_from(c.storage_offset()).unwrap_or(0) * elem;
    let len = usize::try_from(c.numel()).unwrap_or(0) * elem;
    let data = with_tensors(&[(&c, Access::Read)], |d| {
        d.bytes(0)?
            .get(start..start + len)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| Error::runtime("internal error: tensor bytes outside storage"))
    })?;
    Ok(Bytes {
        dtype: c.dtype(),
        shape: c.sizes().iter().map(|&s| s as usize).collect(),
        data,
    })
}

/// Writes named tensors to a safetensors file (`safetensors.torch.save_file`).
pub fn save_file(tensors: &[(String, Tensor)], path: &Path) -> Result<()> {
    let bytes: Vec<(String, Bytes)> = tensors
        .iter()
        .map(|(n, t)| Ok((n.clone(), bytes_of(t)?)))
        .collect::<Result<_>>()?;
    let views: Vec<(&str, &Bytes)> = bytes.iter().map(|(n, b)| (n.as_str(), b)).collect();
    safetensors::serialize_to_file(views, None::<HashMap<String, String>>, path)
        .map_err(|e| Error::runtime(format!("safetensors: cannot write {}: {e}", path.display())))
}

fn tensor_of(view: &TensorView<'_>) -> Result<Tensor> {
    let dtype = from_dtype(view.dtype())?;
    let sizes: Vec<i64> = view.shape().iter().map(|&s| s as i64).collect();
    let storage = Storage::from_host_bytes(view.data())?;
    Tensor::from_storage(storage, &sizes, &contiguous_strides(&sizes), 0, dtype)
}

/// Reads every tensor of a safetensors file, in the file's order
/// (`safetensors.torch.load_file`).
pub fn load_file(path: &Path) -> Result<Vec<(String, Tensor)>> {
    let buffer = std::fs::read(path)
        .map_err(|e| Error::runtime(format!("cannot read {}: {e}", path.display())))?;
    let st = SafeTensors::deserialize(&buffer).map_err(|e| {
        Error::runtime(format!(
            "safetensors: {} is not a valid file: {e}",
            path.display()
        ))
    })?;
    let mut out: Vec<(String, Tensor)> = Vec::new();
    for (name, view) in st.iter() {
        out.push((name.to_string(), tensor_of(&view)?));
    }
    Ok(out)
}
