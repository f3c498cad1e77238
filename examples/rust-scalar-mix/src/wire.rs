//! The wire protocol's frames and values (spec/elmo.md §15.2, §15.3): decoding a request's
//! body into a tree of values, and encoding an answer.

use std::io::{self, Read, Write};

/// A frame's body may declare at most this many bytes (§15.7: 1 GiB).
pub const FRAME_LIMIT: u32 = 1 << 30;
/// Nested lists and maps deeper than this are refused (a bad input is at most a few levels deep).
const DEPTH_LIMIT: usize = 64;
/// Arrays of more dimensions than NumPy's limit are refused (§15.3).
const DIMENSION_LIMIT: u8 = 64;

/// An array (§15.3, tag `a`): its dtype (`f8`, `f4`, `i8`, ..., `b1`), its shape and its
/// elements' little-endian bytes in C order.
#[derive(Debug, Clone)]
pub struct Array {
    pub dtype: [u8; 2],
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

impl Array {
    pub fn dtype_name(&self) -> &str {
        std::str::from_utf8(&self.dtype).unwrap_or("??")
    }

    pub fn elements(&self) -> usize {
        self.shape.iter().product::<u64>() as usize
    }

    pub fn is_float(&self) -> bool {
        &self.dtype == b"f8" || &self.dtype == b"f4"
    }

    /// Element `i` as f64 (a float array only).
    pub fn get(&self, i: usize) -> f64 {
        if &self.dtype == b"f4" {
            let bytes: [u8; 4] = self.data[4 * i..4 * i + 4].try_into().unwrap();
            f64::from(f32::from_le_bytes(bytes))
        } else {
            let bytes: [u8; 8] = self.data[8 * i..8 * i + 8].try_into().unwrap();
            f64::from_le_bytes(bytes)
        }
    }
}

/// One value of §15.3.
#[derive(Debug, Clone)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Value>),
    Map(Vec<(String, Value)>),
    Array(Array),
}

impl Value {
    /// The entry `key` of a map, if this is a map that has it.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn text(&self) -> Option<&str> {
        match self {
            Value::Str(text) => Some(text),
            _ => None,
        }
    }

    /// A short description for an error message: "an f4 array of shape [2, 3]", "a list of 2 values".
    pub fn describe(&self) -> String {
        match self {
            Value::Null => "null".to_string(),
            Value::Bool(b) => format!("the boolean {b}"),
            Value::Int(i) => format!("the integer {i}"),
            Value::Float(x) => format!("the number {x}"),
            Value::Str(_) => "a string".to_string(),
            Value::List(items) => format!("a list of {} values", items.len()),
            Value::Map(entries) => format!("a map of {} entries", entries.len()),
            Value::Array(a) => format!("an {} array of shape {:?}", a.dtype_name(), a.shape),
        }
    }
}

/// Reads values from a frame's body.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.bytes.len() - self.at < n {
            return Err(format!("the body ends early: {n} more bytes expected at offset {}", self.at));
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }

    fn text(&mut self) -> Result<String, String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| "a string is not valid UTF-8".to_string())
    }

    fn count(&mut self) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n > self.bytes.len() - self.at {
            return Err(format!("a count of {n} items exceeds the body"));
        }
        Ok(n)
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > DEPTH_LIMIT {
            return Err(format!("values nested deeper than {DEPTH_LIMIT} levels"));
        }
        let tag = self.take(1)?[0];
        Ok(match tag {
            b'n' => Value::Null,
            b't' => Value::Bool(true),
            b'f' => Value::Bool(false),
            b'i' => Value::Int(i64::from_le_bytes(self.take(8)?.try_into().unwrap())),
            b'd' => Value::Float(f64::from_le_bytes(self.take(8)?.try_into().unwrap())),
            b's' => Value::Str(self.text()?),
            b'l' => {
                let n = self.count()?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(depth + 1)?);
                }
                Value::List(items)
            }
            b'm' => {
                let n = self.count()?;
                let mut entries: Vec<(String, Value)> = Vec::with_capacity(n);
                for _ in 0..n {
                    let key = self.text()?;
                    let value = self.value(depth + 1)?;
                    entries.push((key, value));
                }
                Value::Map(entries)
            }
            b'a' => Value::Array(self.array()?),
            other => return Err(format!("unknown value tag {other:#04x}")),
        })
    }

    fn array(&mut self) -> Result<Array, String> {
        let dtype: [u8; 2] = self.take(2)?.try_into().unwrap();
        let size = match &dtype {
            b"f8" | b"i8" | b"u8" => 8,
            b"f4" | b"i4" | b"u4" => 4,
            b"i2" | b"u2" => 2,
            b"i1" | b"u1" | b"b1" => 1,
            _ => return Err(format!("unknown array dtype {:?}", String::from_utf8_lossy(&dtype))),
        };
        let ndim = self.take(1)?[0];
        if ndim > DIMENSION_LIMIT {
            return Err(format!("an array of {ndim} dimensions, more than {DIMENSION_LIMIT}"));
        }
        let mut shape = Vec::with_capacity(ndim as usize);
        let mut count: u64 = 1;
        for _ in 0..ndim {
            let dim = u64::from_le_bytes(self.take(8)?.try_into().unwrap());
            count = count.checked_mul(dim).ok_or("an array's size overflows")?;
            shape.push(dim);
        }
        let bytes = count.checked_mul(size).ok_or("an array's size overflows")?;
        if bytes > (self.bytes.len() - self.at) as u64 {
            return Err(format!("an array of {bytes} bytes exceeds the body"));
        }
        let data = self.take(bytes as usize)?.to_vec();
        if &dtype == b"b1" && data.iter().any(|&byte| byte > 1) {
            return Err("a b1 array holds a byte other than 0 and 1".to_string());
        }
        Ok(Array { dtype, shape, data })
    }
}

/// Decodes one frame's body: exactly one value.
pub fn decode(body: &[u8]) -> Result<Value, String> {
    let mut reader = Reader { bytes: body, at: 0 };
    let value = reader.value(0)?;
    if reader.at != body.len() {
        return Err(format!("{} bytes follow the value", body.len() - reader.at));
    }
    Ok(value)
}

/// What reading a frame found.
pub enum Frame {
    Body(Vec<u8>),
    /// Standard input ended between frames.
    End,
    /// Bytes that are not a frame: there is no way to find the next one (§15.6).
    Broken(String),
}

pub fn read_frame(input: &mut impl Read) -> Frame {
    let mut header = [0u8; 8];
    let mut got = 0;
    while got < header.len() {
        match input.read(&mut header[got..]) {
            Ok(0) if got == 0 => return Frame::End,
            Ok(0) => return Frame::Broken("standard input ended inside a frame's header".to_string()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Frame::Broken(format!("reading standard input: {e}")),
        }
    }
    if &header[..4] != b"ELMO" {
        return Frame::Broken("a frame does not start with ELMO".to_string());
    }
    let n = u32::from_le_bytes(header[4..].try_into().unwrap());
    if n > FRAME_LIMIT {
        return Frame::Broken(format!("a frame declares {n} bytes, more than the limit of {FRAME_LIMIT}"));
    }
    let mut body = vec![0u8; n as usize];
    match input.read_exact(&mut body) {
        Ok(()) => Frame::Body(body),
        Err(e) => Frame::Broken(format!("a frame's body ends early: {e}")),
    }
}

/// An answer being encoded (§15.3): values are appended in order.
#[derive(Default)]
pub struct Out {
    pub bytes: Vec<u8>,
}

impl Out {
    fn u32(&mut self, n: usize) {
        self.bytes.extend_from_slice(&(n as u32).to_le_bytes());
    }

    pub fn map(&mut self, entries: usize) {
        self.bytes.push(b'm');
        self.u32(entries);
    }

    pub fn list(&mut self, items: usize) {
        self.bytes.push(b'l');
        self.u32(items);
    }

    pub fn key(&mut self, key: &str) {
        self.u32(key.len());
        self.bytes.extend_from_slice(key.as_bytes());
    }

    pub fn text(&mut self, text: &str) {
        self.bytes.push(b's');
        self.key(text);
    }

    pub fn int(&mut self, n: i64) {
        self.bytes.push(b'i');
        self.bytes.extend_from_slice(&n.to_le_bytes());
    }

    pub fn null(&mut self) {
        self.bytes.push(b'n');
    }

    /// An array's header; its elements follow, `bytes` of them.
    pub fn array_header(&mut self, dtype: &str, shape: &[u64]) {
        self.bytes.push(b'a');
        self.bytes.extend_from_slice(dtype.as_bytes());
        self.bytes.push(shape.len() as u8);
        for dim in shape {
            self.bytes.extend_from_slice(&dim.to_le_bytes());
        }
    }

    /// Writes the frame and flushes (§15.1).
    pub fn send(self, output: &mut impl Write) -> io::Result<()> {
        output.write_all(b"ELMO")?;
        output.write_all(&(self.bytes.len() as u32).to_le_bytes())?;
        output.write_all(&self.bytes)?;
        output.flush()
    }
}
