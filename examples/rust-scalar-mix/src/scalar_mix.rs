//! ScalarMix (spec/elmo.md §5), its vector-Jacobian product (§6.3) and the input checks of
//! §8 for them (V12-V15), computed in the layers' float dtype (§1.2).

use crate::wire::{Array, Out, Value};

/// The float type a call computes in: f64 for `f8` layers, f32 for `f4` ones.
pub trait Real: Copy + PartialOrd + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self> {
    const DTYPE: &'static str;
    const ZERO: Self;
    fn from_f64(x: f64) -> Self;
    fn exp(self) -> Self;
    fn mul(self, other: Self) -> Self;
    fn div(self, other: Self) -> Self;
    fn put(self, out: &mut Vec<u8>);
}

impl Real for f64 {
    const DTYPE: &'static str = "f8";
    const ZERO: Self = 0.0;
    fn from_f64(x: f64) -> Self {
        x
    }
    fn exp(self) -> Self {
        f64::exp(self)
    }
    fn mul(self, other: Self) -> Self {
        self * other
    }
    fn div(self, other: Self) -> Self {
        self / other
    }
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

impl Real for f32 {
    const DTYPE: &'static str = "f4";
    const ZERO: Self = 0.0;
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn exp(self) -> Self {
        f32::exp(self)
    }
    fn mul(self, other: Self) -> Self {
        self * other
    }
    fn div(self, other: Self) -> Self {
        self / other
    }
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

/// The checked arguments of a ScalarMix function.
pub struct Mix<'a> {
    pub s: &'a Array,
    pub gamma: &'a Array,
    pub layers: Vec<&'a Array>,
}

fn float_array(value: Option<&Value>) -> Option<&Array> {
    match value {
        Some(Value::Array(a)) if a.is_float() => Some(a),
        _ => None,
    }
}

fn described(value: Option<&Value>) -> String {
    value.map_or("nothing".to_string(), Value::describe)
}

/// V12-V14: `layers` a non-empty list of float arrays of one shape and dtype; `s` a 1-D float
/// array of one finite weight per layer; `gamma` a finite float array of shape [1]. A message
/// names the argument at fault (§1.3).
pub fn check<'a>(args: &'a Value) -> Result<Mix<'a>, String> {
    let layers = match args.get("layers") {
        Some(Value::List(items)) if !items.is_empty() => items,
        other => return Err(format!("layers: expected a non-empty list of float arrays, got {}", described(other))),
    };
    let mut checked = Vec::with_capacity(layers.len());
    for (k, layer) in layers.iter().enumerate() {
        let Some(array) = float_array(Some(layer)) else {
            return Err(format!("layers: layer {k} is not a float32 or float64 array, got {}", layer.describe()));
        };
        if let Some(first) = checked.first().copied() {
            let first: &Array = first;
            if array.shape != first.shape || array.dtype != first.dtype {
                return Err(format!(
                    "layers: layer {k} is {}, layer 0 is {}; all must match",
                    layer.describe(),
                    layers[0].describe()
                ));
            }
        }
        checked.push(array);
    }
    let s = match float_array(args.get("s")) {
        Some(s) if s.shape.len() == 1 => s,
        _ => return Err(format!("s: expected a 1-D float array, got {}", described(args.get("s")))),
    };
    if s.elements() != checked.len() {
        return Err(format!("s: len(s) = {} but there are {} layers (§5.2)", s.elements(), checked.len()));
    }
    if (0..s.elements()).any(|k| !s.get(k).is_finite()) {
        return Err("s: expected finite values".to_string());
    }
    let gamma = match float_array(args.get("gamma")) {
        Some(g) if g.shape == [1] && g.get(0).is_finite() => g,
        _ => {
            let got = described(args.get("gamma"));
            return Err(format!("gamma: expected a finite float array of shape [1], got {got}"));
        }
    };
    Ok(Mix { s, gamma, layers: checked })
}

/// V15: `g_out` a float array of a layer's shape (of either float dtype: it is converted).
pub fn check_g_out<'a>(args: &'a Value, mix: &Mix) -> Result<&'a Array, String> {
    match float_array(args.get("g_out")) {
        Some(g) if g.shape == mix.layers[0].shape => Ok(g),
        _ => Err(format!(
            "g_out: expected a float array of a layer's shape {:?}, got {}",
            mix.layers[0].shape,
            described(args.get("g_out"))
        )),
    }
}

fn values<T: Real>(array: &Array) -> Vec<T> {
    (0..array.elements()).map(|i| T::from_f64(array.get(i))).collect()
}

/// §5.1: softmax(s) with max(s) subtracted first, so no exp overflows (§5.4).
pub fn mix_weights<T: Real>(s: &[T]) -> Vec<T> {
    let mut top = s[0];
    for &x in s {
        if x > top {
            top = x;
        }
    }
    let e: Vec<T> = s.iter().map(|&x| (x - top).exp()).collect();
    let mut total = T::ZERO;
    for &x in &e {
        total = total + x;
    }
    e.iter().map(|&x| x.div(total)).collect()
}

fn put_array<T: Real>(out: &mut Out, shape: &[u64], data: &[T]) {
    out.array_header(T::DTYPE, shape);
    for &x in data {
        x.put(&mut out.bytes);
    }
}

/// §5.2: γ Σ_k w_k R^k, of one layer's shape, in the layers' dtype.
pub fn scalar_mix<T: Real>(mix: &Mix, out: &mut Out) {
    let w = mix_weights::<T>(&values(mix.s));
    let gamma = T::from_f64(mix.gamma.get(0));
    let layers: Vec<Vec<T>> = mix.layers.iter().map(|a| values(a)).collect();
    let n = mix.layers[0].elements();
    let mut result = vec![T::ZERO; n];
    for (i, slot) in result.iter_mut().enumerate() {
        let mut sum = T::ZERO;
        for (k, layer) in layers.iter().enumerate() {
            sum = sum + w[k].mul(layer[i]);
        }
        *slot = gamma.mul(sum);
    }
    put_array(out, &mix.layers[0].shape, &result);
}

/// §6.3: (g_s, g_gamma, g_layers) of J = Σ g_out ⊙ scalar_mix(s, gamma, layers):
/// with m_k = Σ g_out ⊙ R^k and μ = Σ_k w_k m_k, g_gamma = μ, g_s_k = γ w_k (m_k - μ) and
/// g_layers[k] = γ w_k g_out.
pub fn scalar_mix_vjp<T: Real>(mix: &Mix, g_out: &Array, out: &mut Out) {
    let w = mix_weights::<T>(&values(mix.s));
    let gamma = T::from_f64(mix.gamma.get(0));
    let g: Vec<T> = values(g_out);
    let m: Vec<T> = mix
        .layers
        .iter()
        .map(|layer| {
            let mut sum = T::ZERO;
            for (x, &gi) in values::<T>(layer).into_iter().zip(&g) {
                sum = sum + gi.mul(x);
            }
            sum
        })
        .collect();
    let mut mu = T::ZERO;
    for (k, &mk) in m.iter().enumerate() {
        mu = mu + w[k].mul(mk);
    }
    let g_s: Vec<T> = (0..w.len()).map(|k| gamma.mul(w[k]).mul(m[k] - mu)).collect();
    out.list(3);
    put_array(out, &[w.len() as u64], &g_s);
    put_array(out, &[1], &[mu]);
    out.list(w.len());
    for &wk in &w {
        let scale = gamma.mul(wk);
        let g_layer: Vec<T> = g.iter().map(|&gi| scale.mul(gi)).collect();
        put_array(out, &mix.layers[0].shape, &g_layer);
    }
}
