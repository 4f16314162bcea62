//! Protobuf wire format, just enough for tf.train.Example / SequenceExample. Accepts and rejects
//! exactly what upb (protobuf's C runtime, which TensorFlow and our pure-Python path use) does
//! for these messages: unknown fields (groups included) are skipped, known fields with another
//! wire type are unknown fields, packed and unpacked numbers are both legal, a repeated
//! submessage field merges, and a map entry seen twice replaces the first.

pub type WResult<T> = Result<T, &'static str>;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Bytes,
    Float,
    Int64,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bytes => "bytes",
            Kind::Float => "float",
            Kind::Int64 => "int64",
        }
    }
}

#[inline(always)]
pub fn varint(buf: &[u8], pos: &mut usize) -> WResult<u64> {
    let p = *pos;
    if p < buf.len() && buf[p] < 0x80 {
        *pos = p + 1;
        return Ok(buf[p] as u64);
    }
    varint_slow(buf, pos)
}

fn varint_slow(buf: &[u8], pos: &mut usize) -> WResult<u64> {
    let mut result: u64 = 0;
    let mut p = *pos;
    for i in 0..10 {
        if p >= buf.len() {
            return Err("truncated varint");
        }
        let b = buf[p];
        p += 1;
        result |= ((b & 0x7F) as u64).wrapping_shl(7 * i);
        if b < 0x80 {
            *pos = p;
            return Ok(result);
        }
    }
    Err("varint longer than 10 bytes")
}

/// (field number, wire type) of the next tag.
#[inline(always)]
pub fn tag(buf: &[u8], pos: &mut usize) -> WResult<(u32, u8)> {
    let t = varint(buf, pos)?;
    if t > u32::MAX as u64 {
        return Err("tag out of range");
    }
    let field = (t >> 3) as u32;
    if field == 0 {
        return Err("field number 0");
    }
    Ok((field, (t & 7) as u8))
}

/// End of a length-delimited field whose length varint starts at `pos` (moved past it).
#[inline(always)]
pub fn delimited(buf: &[u8], pos: &mut usize, end: usize) -> WResult<usize> {
    let n = varint(&buf[..end], pos)?;
    if n > (end - *pos) as u64 {
        return Err("length overruns its message");
    }
    Ok(*pos + n as usize)
}

/// Skip one unknown field (whose tag was just read).
pub fn skip(buf: &[u8], pos: &mut usize, end: usize, field: u32, wire: u8, depth: u32) -> WResult<()> {
    match wire {
        0 => {
            varint(&buf[..end], pos)?;
        }
        1 | 5 => {
            let n = if wire == 1 { 8 } else { 4 };
            if end - *pos < n {
                return Err("truncated fixed-width field");
            }
            *pos += n;
        }
        2 => {
            *pos = delimited(buf, pos, end)?;
        }
        3 => {
            if depth > 100 {
                return Err("groups nested too deep");
            }
            loop {
                if *pos >= end {
                    return Err("unterminated group");
                }
                let (f, w) = tag(&buf[..end], pos)?;
                if w == 4 {
                    if f != field {
                        return Err("mismatched end group");
                    }
                    return Ok(());
                }
                skip(buf, pos, end, f, w, depth + 1)?;
            }
        }
        4 => return Err("unexpected end group"),
        _ => return Err("invalid wire type"),
    }
    Ok(())
}

/// Iterate the fields of the message in buf[pos..end]: `on_field(field, wire, start, end)` gets
/// length-delimited fields (wire 2) with their payload range and returns true when it used
/// them; every other field is handed over as (field, wire, pos_after_tag, 0) and skipped unless
/// the callback returns true (then it must have consumed nothing: numbers are handled by `numbers`).
#[inline(always)]
pub fn fields<F>(buf: &[u8], start: usize, end: usize, mut on_len: F) -> WResult<()>
where
    F: FnMut(u32, usize, usize) -> WResult<()>,
{
    let mut pos = start;
    let b = &buf[..end];
    while pos < end {
        let (field, wire) = tag(b, &mut pos)?;
        if wire == 2 {
            let e = delimited(b, &mut pos, end)?;
            on_len(field, pos, e)?;
            pos = e;
        } else {
            skip(buf, &mut pos, end, field, wire, 0)?;
        }
    }
    Ok(())
}

/// Up to this many list segments of one Feature are kept inline (a Feature almost always has one).
pub struct Segments {
    pub kind: Option<Kind>,
    pub live: Vec<(usize, usize)>,
}

impl Segments {
    pub fn new() -> Self {
        Segments { kind: None, live: Vec::with_capacity(4) }
    }
    pub fn clear(&mut self) {
        self.kind = None;
        self.live.clear();
    }
}

/// Add the fields of one serialized Feature (buf[start..end]) to `seg` (merge semantics: the
/// same list kind again appends, another kind replaces). Lists that a later kind replaces are
/// validated with `scratch` here, since upb parses them too.
pub fn feature_segments(buf: &[u8], start: usize, end: usize, seg: &mut Segments, scratch: &mut Scratch) -> WResult<()> {
    fields(buf, start, end, |field, s, e| {
        let k = match field {
            1 => Kind::Bytes,
            2 => Kind::Float,
            3 => Kind::Int64,
            _ => return Ok(()),
        };
        if seg.kind != Some(k) {
            if let Some(old) = seg.kind {
                for &(a, b) in seg.live.iter() {
                    scratch.validate(buf, old, a, b)?;
                }
            }
            seg.live.clear();
            seg.kind = Some(k);
        }
        seg.live.push((s, e));
        Ok(())
    })
}

/// Throwaway buffers for validating lists whose values nobody keeps.
pub struct Scratch {
    pub ints: Vec<i64>,
    pub floats: Vec<f32>,
    pub data: Vec<u8>,
    pub offs: Vec<i64>,
}

impl Scratch {
    pub fn new() -> Self {
        Scratch { ints: Vec::new(), floats: Vec::new(), data: Vec::new(), offs: vec![0] }
    }
    pub fn validate(&mut self, buf: &[u8], kind: Kind, s: usize, e: usize) -> WResult<()> {
        let r = match kind {
            Kind::Int64 => ints(buf, s, e, &mut self.ints),
            Kind::Float => floats(buf, s, e, &mut self.floats),
            Kind::Bytes => bytes(buf, s, e, &mut self.data, &mut self.offs),
        };
        self.ints.clear();
        self.floats.clear();
        self.data.clear();
        self.offs.truncate(1);
        r
    }
}

/// Values of an Int64List message in buf[s..e].
#[inline]
pub fn ints(buf: &[u8], s: usize, e: usize, out: &mut Vec<i64>) -> WResult<()> {
    let b = &buf[..e];
    let mut pos = s;
    while pos < e {
        let (field, wire) = tag(b, &mut pos)?;
        if field == 1 && wire == 2 {
            let end = delimited(b, &mut pos, e)?;
            let p = &b[..end];
            while pos < end {
                let v = varint(p, &mut pos)?;
                out.push(v as i64);
            }
        } else if field == 1 && wire == 0 {
            out.push(varint(b, &mut pos)? as i64);
        } else {
            skip(buf, &mut pos, e, field, wire, 0)?;
        }
    }
    Ok(())
}

/// Values of a FloatList message in buf[s..e].
#[inline]
pub fn floats(buf: &[u8], s: usize, e: usize, out: &mut Vec<f32>) -> WResult<()> {
    let b = &buf[..e];
    let mut pos = s;
    while pos < e {
        let (field, wire) = tag(b, &mut pos)?;
        if field == 1 && wire == 2 {
            let end = delimited(b, &mut pos, e)?;
            if (end - pos) % 4 != 0 {
                return Err("packed float list length not a multiple of 4");
            }
            out.extend(b[pos..end].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])));
            pos = end;
        } else if field == 1 && wire == 5 {
            if e - pos < 4 {
                return Err("truncated float");
            }
            out.push(f32::from_le_bytes([b[pos], b[pos + 1], b[pos + 2], b[pos + 3]]));
            pos += 4;
        } else {
            skip(buf, &mut pos, e, field, wire, 0)?;
        }
    }
    Ok(())
}

/// Values of a BytesList message in buf[s..e] (appended to data, one end offset each).
#[inline]
pub fn bytes(buf: &[u8], s: usize, e: usize, data: &mut Vec<u8>, offs: &mut Vec<i64>) -> WResult<()> {
    let b = &buf[..e];
    let mut pos = s;
    while pos < e {
        let (field, wire) = tag(b, &mut pos)?;
        if field == 1 && wire == 2 {
            let end = delimited(b, &mut pos, e)?;
            data.extend_from_slice(&b[pos..end]);
            offs.push(data.len() as i64);
            pos = end;
        } else {
            skip(buf, &mut pos, e, field, wire, 0)?;
        }
    }
    Ok(())
}

/// Key of a map entry in buf[s..e] and the ranges of its value field(s) (a value field seen
/// twice merges, so all of them count). Every key occurrence must be UTF-8 (proto3 string).
/// None: the entry holds an unknown field, and upb then keeps it out of the map (it goes to the
/// parent's unknown fields), though its value is still parsed.
pub fn map_entry<'a>(buf: &'a [u8], s: usize, e: usize, values: &mut Vec<(usize, usize)>) -> WResult<Option<&'a [u8]>> {
    let mut key: &[u8] = b"";
    let mut unknown = false;
    values.clear();
    let b = &buf[..e];
    let mut pos = s;
    while pos < e {
        let (field, wire) = tag(b, &mut pos)?;
        if wire == 2 && (field == 1 || field == 2) {
            let end = delimited(b, &mut pos, e)?;
            if field == 1 {
                key = &b[pos..end];
                if std::str::from_utf8(key).is_err() {
                    return Err("feature name is not UTF-8");
                }
            } else {
                values.push((pos, end));
            }
            pos = end;
        } else {
            unknown = true;
            skip(buf, &mut pos, e, field, wire, 0)?;
        }
    }
    Ok(if unknown { None } else { Some(key) })
}

// ------------------------------------------------------------------------------- encoding

#[inline(always)]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline(always)]
pub fn varint_len(v: u64) -> usize {
    ((64 - (v | 1).leading_zeros() as usize) + 6) / 7
}
