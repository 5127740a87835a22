//! Devices, layouts and memory formats.

use crate::keys::BackendComponent;
use crate::{Error, Result};
use std::fmt;
use std::sync::OnceLock;

/// A kind of device (PyTorch's `c10::DeviceType`, restricted to the ones that have a
/// backend component here).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceType {
    /// Host memory, the reference backend.
    Cpu,
    /// NVIDIA GPUs (no kernels here; accepted so PyTorch programs parse).
    Cuda,
    /// AMD GPUs.
    Hip,
    /// XLA devices.
    Xla,
    /// Apple GPUs.
    Mps,
    /// Graphcore IPUs.
    Ipu,
    /// Intel GPUs.
    Xpu,
    /// Habana HPUs.
    Hpu,
    /// NEC vector engines.
    Ve,
    /// The lazy backend: tensors hold graph values, computed at `mark_step()`.
    Lazy,
    /// Meta accelerators.
    Mtia,
    /// MAIA devices.
    Maia,
    /// The extension slot for an out-of-tree backend, renamable with
    /// [`register_privateuse1_backend`].
    PrivateUse1,
    /// Tensors with shapes and dtypes but no data.
    Meta,
}

impl DeviceType {
    /// Every device type.
    pub const ALL: [DeviceType; 14] = [
        DeviceType::Cpu,
        DeviceType::Cuda,
        DeviceType::Hip,
        DeviceType::Xla,
        DeviceType::Mps,
        DeviceType::Ipu,
        DeviceType::Xpu,
        DeviceType::Hpu,
        DeviceType::Ve,
        DeviceType::Lazy,
        DeviceType::Mtia,
        DeviceType::Maia,
        DeviceType::PrivateUse1,
        DeviceType::Meta,
    ];

    /// The lower-case name PyTorch uses in device strings; the registered backend name for
    /// `PrivateUse1` (default `privateuseone`).
    pub fn name(self) -> &'static str {
        match self {
            DeviceType::Cpu => "cpu",
            DeviceType::Cuda => "cuda",
            DeviceType::Hip => "hip",
            DeviceType::Xla => "xla",
            DeviceType::Mps => "mps",
            DeviceType::Ipu => "ipu",
            DeviceType::Xpu => "xpu",
            DeviceType::Hpu => "hpu",
            DeviceType::Ve => "ve",
            DeviceType::Lazy => "lazy",
            DeviceType::Mtia => "mtia",
            DeviceType::Maia => "maia",
            DeviceType::PrivateUse1 => privateuse1_backend_name(),
            DeviceType::Meta => "meta",
        }
    }

    /// The backend component (the backend bit of a dispatch key set) of this device type.
    pub const fn backend_component(self) -> BackendComponent {
        match self {
            DeviceType::Cpu => BackendComponent::CPU,
            DeviceType::Cuda => BackendComponent::CUDA,
            DeviceType::Hip => BackendComponent::HIP,
            DeviceType::Xla => BackendComponent::XLA,
            DeviceType::Mps => BackendComponent::MPS,
            DeviceType::Ipu => BackendComponent::IPU,
            DeviceType::Xpu => BackendComponent::XPU,
            DeviceType::Hpu => BackendComponent::HPU,
            DeviceType::Ve => BackendComponent::VE,
            DeviceType::Lazy => BackendComponent::Lazy,
            DeviceType::Mtia => BackendComponent::MTIA,
            DeviceType::Maia => BackendComponent::MAIA,
            DeviceType::PrivateUse1 => BackendComponent::PrivateUse1,
            DeviceType::Meta => BackendComponent::Meta,
        }
    }

    /// The device type of a backend component (`None` for the components without a device
    /// type here: PrivateUse2/3 and the invalid bit).
    pub fn from_backend_component(b: BackendComponent) -> Option<DeviceType> {
        DeviceType::ALL
            .into_iter()
            .find(|d| d.backend_component() == b)
    }

    fn parse(name: &str) -> Option<DeviceType> {
        if name == "privateuseone" || name == privateuse1_backend_name() {
            return Some(DeviceType::PrivateUse1);
        }
        DeviceType::ALL.into_iter().find(|d| d.name() == name)
    }
}

static PRIVATEUSE1_NAME: OnceLock<&'static str> = OnceLock::new();

/// The name of the `PrivateUse1` backend: `privateuseone` unless renamed.
pub fn privateuse1_backend_name() -> &'static str {
    PRIVATEUSE1_NAME.get().copied().unwrap_or("privateuseone")
}

/// Renames the `PrivateUse1` device type (`torch.utils.rename_privateuse1_backend`).
///
/// Like PyTorch, the name can be set once per process; setting the same name again is
/// accepted, a different one is an error.
pub fn register_privateuse1_backend(name: &str) -> Result<()> {
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !valid {
        return Err(Error::runtime(format!(
            "Invalid backend name '{name}': use lower-case letters, digits and underscores"
        )));
    }
    if DeviceType::ALL
        .into_iter()
        .any(|d| d != DeviceType::PrivateUse1 && d.name() == name)
    {
        return Err(Error::runtime(format!(
            "Cannot rename the privateuse1 backend to the built-in device type '{name}'"
        )));
    }
    let leaked: &'static str = match PRIVATEUSE1_NAME.get() {
        Some(existing) => existing,
        None => {
            // Leaks one short string once per process; device names live forever.
            let stored = Box::leak(name.to_owned().into_boxed_str());
            PRIVATEUSE1_NAME.get_or_init(|| stored)
        }
    };
    if leaked != name {
        return Err(Error::runtime(format!(
            "torch.register_privateuse1_backend() has already been set! Current backend: {leaked}"
        )));
    }
    Ok(())
}

/// A device: a type and an optional index (`cuda:1`; `None` means "the current one").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    kind: DeviceType,
    index: Option<u16>,
}

impl Device {
    /// The CPU.
    pub const CPU: Device = Device {
        kind: DeviceType::Cpu,
        index: None,
    };
    /// The meta device.
    pub const META: Device = Device {
        kind: DeviceType::Meta,
        index: None,
    };

    /// A device of `kind` with `index`.
    pub const fn new(kind: DeviceType, index: Option<u16>) -> Device {
        Device { kind, index }
    }

    /// The device type.
    pub const fn kind(self) -> DeviceType {
        self.kind
    }

    /// The index, if any.
    pub const fn index(self) -> Option<u16> {
        self.index
    }

    /// True for the CPU.
    pub fn is_cpu(self) -> bool {
        self.kind == DeviceType::Cpu
    }

    /// True for the meta device.
    pub fn is_meta(self) -> bool {
        self.kind == DeviceType::Meta
    }

    /// Parses `cpu`, `meta`, `lazy:0`, `cuda:1`, the registered PrivateUse1 name, ...
    pub fn parse(s: &str) -> Result<Device> {
        let bad = || {
            Error::runtime(format!(
                "Invalid device string: '{s}'. Expected a device type (cpu, meta, lazy, {}, ...) optionally followed by ':' and an index",
                privateuse1_backend_name()
            ))
        };
        let (name, index) = match s.split_once(':') {
            Some((n, i)) => {
                let idx: u16 = i.parse().map_err(|_| bad())?;
                (n, Some(idx))
            }
            None => (s, None),
        };
        let kind = DeviceType::parse(name).ok_or_else(bad)?;
        if kind == DeviceType::Cpu && index.is_some_and(|i| i != 0) {
            return Err(Error::runtime(format!(
                "CPU device index must be -1 or zero, got {}",
                index.unwrap_or(0)
            )));
        }
        Ok(Device { kind, index })
    }
}

impl fmt::Display for Device {
    /// `cpu`, `meta`, `lazy:0`, like `str(torch.device(...))`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.name())?;
        if let Some(i) = self.index {
            write!(f, ":{i}")?;
        }
        Ok(())
    }
}

impl From<DeviceType> for Device {
    fn from(kind: DeviceType) -> Device {
        Device { kind, index: None }
    }
}

/// How a tensor's elements are laid out. Only dense strided tensors exist so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Dense, with sizes and strides (`torch.strided`).
    Strided,
}

impl Layout {
    /// Parses `strided` / `torch.strided` / `Strided`.
    pub fn parse(s: &str) -> Result<Layout> {
        match s.strip_prefix("torch.").unwrap_or(s) {
            "strided" | "Strided" => Ok(Layout::Strided),
            _ => Err(Error::value(format!("unknown layout '{s}'"))),
        }
    }

    /// The enum value PyTorch boxes a layout as.
    pub const fn to_i64(self) -> i64 {
        0
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("torch.strided")
    }
}

/// The stride order requested for a new tensor (`torch.memory_format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryFormat {
    /// Row-major (`torch.contiguous_format`).
    Contiguous,
    /// Keep the input's layout where possible (`torch.preserve_format`).
    Preserve,
    /// NHWC for 4-d tensors (`torch.channels_last`).
    ChannelsLast,
    /// NDHWC for 5-d tensors (`torch.channels_last_3d`).
    ChannelsLast3d,
}

impl MemoryFormat {
    /// The schema-default spelling (`contiguous_format`, `preserve_format`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            MemoryFormat::Contiguous => "contiguous_format",
            MemoryFormat::Preserve => "preserve_format",
            MemoryFormat::ChannelsLast => "channels_last",
            MemoryFormat::ChannelsLast3d => "channels_last_3d",
        }
    }

    /// Parses the schema or Python spelling.
    pub fn parse(s: &str) -> Result<MemoryFormat> {
        let bare = s.strip_prefix("torch.").unwrap_or(s);
        [
            MemoryFormat::Contiguous,
            MemoryFormat::Preserve,
            MemoryFormat::ChannelsLast,
            MemoryFormat::ChannelsLast3d,
        ]
        .into_iter()
        .find(|m| m.name() == bare)
        .ok_or_else(|| Error::value(format!("unknown memory format '{s}'")))
    }

    /// The enum value PyTorch boxes a memory format as.
    pub const fn to_i64(self) -> i64 {
        match self {
            MemoryFormat::Contiguous => 0,
            MemoryFormat::Preserve => 1,
            MemoryFormat::ChannelsLast => 2,
            MemoryFormat::ChannelsLast3d => 3,
        }
    }

    /// The memory format with enum value `v`.
    pub fn from_i64(v: i64) -> Option<MemoryFormat> {
        [
            MemoryFormat::Contiguous,
            MemoryFormat::Preserve,
            MemoryFormat::ChannelsLast,
            MemoryFormat::ChannelsLast3d,
        ]
        .into_iter()
        .find(|m| m.to_i64() == v)
    }
}

impl fmt::Display for MemoryFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "torch.{}", self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print_devices() {
        for s in ["cpu", "meta", "lazy:0", "cuda:3", "privateuseone:1"] {
            assert_eq!(Device::parse(s).unwrap().to_string(), s);
        }
        assert!(Device::parse("cpu:1").is_err());
        assert!(Device::parse("gpu").is_err());
        assert!(Device::parse("cuda:x").is_err());
        assert_eq!(Device::parse("lazy").unwrap().kind(), DeviceType::Lazy);
    }

    #[test]
    fn memory_formats_round_trip() {
        for m in [
            MemoryFormat::Contiguous,
            MemoryFormat::Preserve,
            MemoryFormat::ChannelsLast,
            MemoryFormat::ChannelsLast3d,
        ] {
            assert_eq!(MemoryFormat::parse(m.name()).unwrap(), m);
            assert_eq!(MemoryFormat::from_i64(m.to_i64()), Some(m));
        }
    }
}
