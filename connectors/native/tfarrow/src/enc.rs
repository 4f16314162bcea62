//! Arrow record batch (read in place through the C data interface) -> serialized Examples /
//! SequenceExamples, byte for byte what the pure-Python path (upb) writes with deterministic=True.

use arrow_data::ffi::FFI_ArrowArray;
use arrow_schema::DataType;

use crate::wire::{put_varint, varint_len, Kind};

#[derive(Clone, Copy)]
enum LeafT {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    Bool,
    F32,
    F64,
    Bin32,
    Bin64,
    FixedBin(usize),
}

#[derive(Clone, Copy)]
enum ListT {
    L32,
    L64,
    Fixed(usize),
}

struct Node<'a> {
    arr: &'a FFI_ArrowArray,
}

impl<'a> Node<'a> {
    #[inline]
    fn valid(&self, i: usize) -> bool {
        if self.arr.null_count() == 0 {
            return true;
        }
        let p = self.arr.buffer(0);
        if p.is_null() {
            return true;
        }
        let j = i + self.arr.offset();
        unsafe { (*p.add(j >> 3) >> (j & 7)) & 1 == 1 }
    }
    #[inline]
    fn range(&self, t: ListT, i: usize) -> (usize, usize) {
        let j = i + self.arr.offset();
        unsafe {
            match t {
                ListT::L32 => {
                    let o = self.arr.buffer(1) as *const i32;
                    (*o.add(j) as usize, *o.add(j + 1) as usize)
                }
                ListT::L64 => {
                    let o = self.arr.buffer(1) as *const i64;
                    (*o.add(j) as usize, *o.add(j + 1) as usize)
                }
                ListT::Fixed(n) => (j * n, (j + 1) * n),
            }
        }
    }
    fn child(&self) -> Node<'a> {
        Node { arr: self.arr.child(0) }
    }
}

pub struct Column<'a> {
    key: Vec<u8>,
    name: String,
    levels: Vec<(Node<'a>, ListT)>, // list levels from the top; the leaf node follows
    leaf: Node<'a>,
    leaf_t: LeafT,
    kind: Kind,
    top: Node<'a>,
    seq: bool,
    base: usize, // the record batch's own offset (a slice)
}

fn list_t(dt: &DataType) -> Option<(ListT, &DataType)> {
    match dt {
        DataType::List(f) => Some((ListT::L32, f.data_type())),
        DataType::LargeList(f) => Some((ListT::L64, f.data_type())),
        DataType::FixedSizeList(f, n) => Some((ListT::Fixed(*n as usize), f.data_type())),
        _ => None,
    }
}

fn leaf_t(dt: &DataType) -> Option<(LeafT, Kind)> {
    use Kind::*;
    Some(match dt {
        DataType::Int8 => (LeafT::I8, Int64),
        DataType::Int16 => (LeafT::I16, Int64),
        DataType::Int32 => (LeafT::I32, Int64),
        DataType::Int64 => (LeafT::I64, Int64),
        DataType::UInt8 => (LeafT::U8, Int64),
        DataType::UInt16 => (LeafT::U16, Int64),
        DataType::UInt32 => (LeafT::U32, Int64),
        DataType::UInt64 => (LeafT::U64, Int64),
        DataType::Boolean => (LeafT::Bool, Int64),
        DataType::Float32 => (LeafT::F32, Float),
        DataType::Float64 => (LeafT::F64, Float),
        DataType::Binary | DataType::Utf8 => (LeafT::Bin32, Bytes),
        DataType::LargeBinary | DataType::LargeUtf8 => (LeafT::Bin64, Bytes),
        DataType::FixedSizeBinary(w) => (LeafT::FixedBin(*w as usize), Bytes),
        _ => return None,
    })
}

impl<'a> Column<'a> {
    pub fn new(name: &str, dt: &DataType, arr: &'a FFI_ArrowArray, seq: bool, base: usize) -> Result<Column<'a>, String> {
        let mut levels = Vec::new();
        let mut node = Node { arr };
        let mut t = dt;
        while let Some((lt, inner)) = list_t(t) {
            let child = node.child();
            levels.push((node, lt));
            node = child;
            t = inner;
        }
        let bad = || format!("column '{}' of type {} has no tf.train.Feature equivalent", name, dt);
        let (leaf_t, kind) = leaf_t(t).ok_or_else(bad)?;
        if levels.len() > 2 || (levels.len() == 2 && !seq) {
            return Err(bad());
        }
        Ok(Column { key: name.as_bytes().to_vec(), name: name.to_string(), levels, leaf: node, leaf_t, kind, top: Node { arr }, seq, base })
    }

    fn null_inside(&self, row: usize) -> String {
        format!("column '{}' row {} holds a null inside a list: a tf.train.Feature cannot hold it", self.name, row)
    }

    /// Serialized Feature of leaf values [a, b) into `out`.
    fn feature(&self, a: usize, b: usize, row: usize, out: &mut Vec<u8>, tmp: &mut Vec<u8>) -> Result<(), String> {
        tmp.clear();
        let leaf = &self.leaf;
        for j in a..b {
            if !leaf.valid(j) {
                return Err(self.null_inside(row));
            }
        }
        let off = leaf.arr.offset();
        unsafe {
            macro_rules! ints {
                ($t:ty) => {{
                    let p = leaf.arr.buffer(1) as *const $t;
                    for j in a..b {
                        put_varint(tmp, *p.add(j + off) as i64 as u64);
                    }
                }};
            }
            match self.leaf_t {
                LeafT::I8 => ints!(i8),
                LeafT::I16 => ints!(i16),
                LeafT::I32 => ints!(i32),
                LeafT::I64 => ints!(i64),
                LeafT::U8 => ints!(u8),
                LeafT::U16 => ints!(u16),
                LeafT::U32 => ints!(u32),
                LeafT::U64 => {
                    let p = leaf.arr.buffer(1) as *const u64;
                    for j in a..b {
                        let v = *p.add(j + off);
                        if v > i64::MAX as u64 {
                            return Err(format!("column '{}' row {} value {} does not fit int64", self.name, row, v));
                        }
                        put_varint(tmp, v);
                    }
                }
                LeafT::Bool => {
                    let p = leaf.arr.buffer(1);
                    for j in a..b {
                        let k = j + off;
                        tmp.push((*p.add(k >> 3) >> (k & 7)) & 1);
                    }
                }
                LeafT::F32 => {
                    let p = leaf.arr.buffer(1) as *const f32;
                    for j in a..b {
                        tmp.extend_from_slice(&(*p.add(j + off)).to_le_bytes());
                    }
                }
                LeafT::F64 => {
                    let p = leaf.arr.buffer(1) as *const f64;
                    for j in a..b {
                        tmp.extend_from_slice(&(*p.add(j + off) as f32).to_le_bytes());
                    }
                }
                LeafT::Bin32 | LeafT::Bin64 | LeafT::FixedBin(_) => {
                    let data = if let LeafT::FixedBin(_) = self.leaf_t { leaf.arr.buffer(1) } else { leaf.arr.buffer(2) };
                    for j in a..b {
                        let k = j + off;
                        let (s, e) = match self.leaf_t {
                            LeafT::Bin32 => {
                                let o = leaf.arr.buffer(1) as *const i32;
                                (*o.add(k) as usize, *o.add(k + 1) as usize)
                            }
                            LeafT::Bin64 => {
                                let o = leaf.arr.buffer(1) as *const i64;
                                (*o.add(k) as usize, *o.add(k + 1) as usize)
                            }
                            LeafT::FixedBin(w) => (k * w, (k + 1) * w),
                            _ => unreachable!(),
                        };
                        let v = if e > s { std::slice::from_raw_parts(data.add(s), e - s) } else { &[][..] };
                        tmp.push(0x0A);
                        put_varint(tmp, v.len() as u64);
                        tmp.extend_from_slice(v);
                    }
                }
            }
        }
        let tag = match self.kind {
            Kind::Bytes => 0x0A,
            Kind::Float => 0x12,
            Kind::Int64 => 0x1A,
        };
        out.push(tag);
        if self.kind == Kind::Bytes || tmp.is_empty() {
            put_varint(out, tmp.len() as u64);
            out.extend_from_slice(tmp);
        } else {
            put_varint(out, (1 + varint_len(tmp.len() as u64) + tmp.len()) as u64);
            out.push(0x0A);
            put_varint(out, tmp.len() as u64);
            out.extend_from_slice(tmp);
        }
        Ok(())
    }

    /// The map entry of this column for `row` appended to `out` (nothing for a null cell).
    fn entry(&self, row: usize, out: &mut Vec<u8>, s: &mut Bufs) -> Result<(), String> {
        let r = row + self.base;
        if !self.top.valid(r) {
            return Ok(());
        }
        s.value.clear();
        if self.seq {
            let (outer, ot) = &self.levels[0];
            let (mid, mt) = &self.levels[1];
            let (a, b) = outer.range(*ot, r);
            for k in a..b {
                if !mid.valid(k) {
                    return Err(self.null_inside(row));
                }
                let (x, y) = mid.range(*mt, k);
                s.feat.clear();
                self.feature(x, y, row, &mut s.feat, &mut s.tmp)?;
                s.value.push(0x0A);
                put_varint(&mut s.value, s.feat.len() as u64);
                s.value.extend_from_slice(&s.feat);
            }
        } else if self.levels.is_empty() {
            self.feature(r, r + 1, row, &mut s.value, &mut s.tmp)?;
        } else {
            let (a, b) = self.levels[0].0.range(self.levels[0].1, r);
            self.feature(a, b, row, &mut s.value, &mut s.tmp)?;
        }
        let k = self.key.len();
        let v = s.value.len();
        out.push(0x0A);
        put_varint(out, (2 + varint_len(k as u64) + k + varint_len(v as u64) + v) as u64);
        out.push(0x0A);
        put_varint(out, k as u64);
        out.extend_from_slice(&self.key);
        out.push(0x12);
        put_varint(out, v as u64);
        out.extend_from_slice(&s.value);
        Ok(())
    }
}

#[derive(Default)]
pub struct Bufs {
    tmp: Vec<u8>,
    feat: Vec<u8>,
    value: Vec<u8>,
    ctx: Vec<u8>,
    lists: Vec<u8>,
}

/// One serialized record per row of the columns (in the order given: the caller sorts them by
/// name for deterministic output).
pub fn encode_rows(cols: &[Column], rows: usize, sequence: bool, emit: &mut dyn FnMut(&[u8])) -> Result<(), String> {
    let mut s = Bufs::default();
    let mut rec = Vec::new();
    for row in 0..rows {
        let mut ctx = std::mem::take(&mut s.ctx);
        let mut lists = std::mem::take(&mut s.lists);
        ctx.clear();
        lists.clear();
        for c in cols {
            if c.seq {
                c.entry(row, &mut lists, &mut s)?;
            } else {
                c.entry(row, &mut ctx, &mut s)?;
            }
        }
        rec.clear();
        rec.push(0x0A);
        put_varint(&mut rec, ctx.len() as u64);
        rec.extend_from_slice(&ctx);
        if sequence {
            rec.push(0x12);
            put_varint(&mut rec, lists.len() as u64);
            rec.extend_from_slice(&lists);
        }
        emit(&rec);
        s.ctx = ctx;
        s.lists = lists;
    }
    Ok(())
}
