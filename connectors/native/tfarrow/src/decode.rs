//! Serialized Examples / SequenceExamples -> Arrow column data, with a schema (every value
//! checked against it: kind, count, range, UTF-8) or inferring one in the same pass.
//! Error texts are shared word for word with the pure-Python path (connectors/python/tfhadoop/connectors/arrow.py).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, Fields};

use crate::wire::{self, Kind, Scratch, Segments};

pub enum DErr {
    Malformed(&'static str),
    Schema(String),
}

type DResult<T> = Result<T, DErr>;

impl From<&'static str> for DErr {
    fn from(s: &'static str) -> Self {
        DErr::Malformed(s)
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Leaf {
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
    Bin { large: bool, utf8: bool },
}

impl Leaf {
    pub fn from_type(t: &DataType) -> Option<Leaf> {
        Some(match t {
            DataType::Int8 => Leaf::I8,
            DataType::Int16 => Leaf::I16,
            DataType::Int32 => Leaf::I32,
            DataType::Int64 => Leaf::I64,
            DataType::UInt8 => Leaf::U8,
            DataType::UInt16 => Leaf::U16,
            DataType::UInt32 => Leaf::U32,
            DataType::UInt64 => Leaf::U64,
            DataType::Boolean => Leaf::Bool,
            DataType::Float32 => Leaf::F32,
            DataType::Float64 => Leaf::F64,
            DataType::Binary => Leaf::Bin { large: false, utf8: false },
            DataType::LargeBinary => Leaf::Bin { large: true, utf8: false },
            DataType::Utf8 => Leaf::Bin { large: false, utf8: true },
            DataType::LargeUtf8 => Leaf::Bin { large: true, utf8: true },
            _ => return None,
        })
    }
    fn kind(self) -> Kind {
        match self {
            Leaf::F32 | Leaf::F64 => Kind::Float,
            Leaf::Bin { .. } => Kind::Bytes,
            _ => Kind::Int64,
        }
    }
    /// Inclusive range of int64 values that fit (None: all do).
    fn range(self) -> Option<(i128, i128)> {
        Some(match self {
            Leaf::I8 => (i8::MIN as i128, i8::MAX as i128),
            Leaf::I16 => (i16::MIN as i128, i16::MAX as i128),
            Leaf::I32 => (i32::MIN as i128, i32::MAX as i128),
            Leaf::U8 => (0, u8::MAX as i128),
            Leaf::U16 => (0, u16::MAX as i128),
            Leaf::U32 => (0, u32::MAX as i128),
            Leaf::U64 => (0, i64::MAX as i128),
            Leaf::Bool => (0, 1),
            _ => return None,
        })
    }
    fn data_type(self) -> DataType {
        match self {
            Leaf::I8 => DataType::Int8,
            Leaf::I16 => DataType::Int16,
            Leaf::I32 => DataType::Int32,
            Leaf::I64 => DataType::Int64,
            Leaf::U8 => DataType::UInt8,
            Leaf::U16 => DataType::UInt16,
            Leaf::U32 => DataType::UInt32,
            Leaf::U64 => DataType::UInt64,
            Leaf::Bool => DataType::Boolean,
            Leaf::F32 => DataType::Float32,
            Leaf::F64 => DataType::Float64,
            Leaf::Bin { large: false, utf8: false } => DataType::Binary,
            Leaf::Bin { large: true, utf8: false } => DataType::LargeBinary,
            Leaf::Bin { large: false, utf8: true } => DataType::Utf8,
            Leaf::Bin { large: true, utf8: true } => DataType::LargeUtf8,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Shape {
    Scalar,
    Fixed(usize),
    List { large: bool },
}

/// What the schema says about one column.
#[derive(Clone, Debug)]
pub struct Spec {
    pub leaf: Leaf,
    pub shape: Shape,             // context column, or the step shape of a feature list
    pub outer_large: bool,        // feature lists: large_list outside
    pub nullable: bool,
    pub type_name: String,        // the Arrow type as pyarrow prints it, for messages
    pub leaf_name: String,
    pub field: Field,
    pub empty_is_null: bool,      // an empty value list under a nullable scalar is null (not strict)
}

/// Parse a schema field; `seq` says it is a SequenceExample feature list.
pub fn spec_of(field: &Field, seq: bool, type_name: String, leaf_name: String) -> Result<Spec, String> {
    let unsupported = || format!("column {:?} of type {} cannot be decoded from tf.train.Feature values", field.name(), type_name);
    let mut t = field.data_type();
    let mut outer_large = false;
    if seq {
        match t {
            DataType::List(f) => t = f.data_type(),
            DataType::LargeList(f) => {
                outer_large = true;
                t = f.data_type()
            }
            _ => return Err(unsupported()),
        }
    }
    let (shape, leaf_t) = match t {
        DataType::List(f) => (Shape::List { large: false }, f.data_type()),
        DataType::LargeList(f) => (Shape::List { large: true }, f.data_type()),
        DataType::FixedSizeList(f, n) => (Shape::Fixed(*n as usize), f.data_type()),
        other if !seq => (Shape::Scalar, other),
        _ => return Err(unsupported()),
    };
    let leaf = Leaf::from_type(leaf_t).ok_or_else(unsupported)?;
    Ok(Spec { leaf, shape, outer_large, nullable: field.is_nullable(), type_name, leaf_name, field: field.clone(), empty_is_null: true })
}

pub struct Col {
    pub name: String,
    pub seq: bool,
    spec: Option<Spec>,
    kind: Option<Kind>,
    ints: Vec<i64>,
    floats: Vec<f32>,
    data: Vec<u8>,
    boffs: Vec<i64>,
    offs: Vec<i64>,
    steps: Vec<i64>,
    valid: Vec<bool>,
    nulls: usize,
    // inference
    seen: usize,
    len_first: Option<usize>,
    len_same: bool,
    utf8: bool,
    first_bad_utf8: Option<usize>,
    step_seen: usize,
}

impl Col {
    fn new(name: String, seq: bool, spec: Option<Spec>) -> Col {
        let kind = spec.as_ref().map(|s| s.leaf.kind());
        Col {
            name,
            seq,
            spec,
            kind,
            ints: Vec::new(),
            floats: Vec::new(),
            data: Vec::new(),
            boffs: vec![0],
            offs: vec![0],
            steps: vec![0],
            valid: Vec::new(),
            nulls: 0,
            seen: 0,
            len_first: None,
            len_same: true,
            utf8: true,
            first_bad_utf8: None,
            step_seen: 0,
        }
    }

    fn nvals(&self) -> usize {
        match self.kind {
            Some(Kind::Int64) => self.ints.len(),
            Some(Kind::Float) => self.floats.len(),
            Some(Kind::Bytes) => self.boffs.len() - 1,
            None => 0,
        }
    }

    fn truncate_values(&mut self, n: usize) {
        match self.kind {
            Some(Kind::Int64) => self.ints.truncate(n),
            Some(Kind::Float) => self.floats.truncate(n),
            Some(Kind::Bytes) => {
                self.boffs.truncate(n + 1);
                self.data.truncate(*self.boffs.last().unwrap() as usize);
            }
            None => {}
        }
    }

    fn clear(&mut self) {
        self.truncate_values(0);
        self.offs.truncate(1);
        self.steps.truncate(1);
        self.valid.clear();
        self.nulls = 0;
    }

    fn push_null(&mut self, rec: usize) -> DResult<()> {
        if let Some(s) = &self.spec {
            if !s.nullable {
                return Err(DErr::Schema(format!(
                    "feature '{}' is missing from record {} but the schema says not null",
                    self.name, rec
                )));
            }
        }
        let last = if self.seq { self.steps.len() - 1 } else { self.nvals() };
        self.offs.push(last as i64);
        self.valid.push(false);
        self.nulls += 1;
        Ok(())
    }

    /// Decode one Feature (its segments already collected) as the next values; returns the count.
    fn feature(&mut self, buf: &[u8], seg: &Segments, rec: usize, step: Option<usize>) -> DResult<usize> {
        if let Some(k) = seg.kind {
            match self.kind {
                None => self.kind = Some(k),
                Some(c) if c != k => {
                    return Err(DErr::Schema(match &self.spec {
                        Some(s) => format!(
                            "feature '{}' in record {} holds {} values but the schema says {}",
                            self.name,
                            rec,
                            k.name(),
                            s.type_name
                        ),
                        None => format!("feature '{}' (record {}): feature holds both {} and {} values", self.name, rec, c.name(), k.name()),
                    }));
                }
                _ => {}
            }
        }
        let before = self.nvals();
        if let Some(k) = seg.kind {
            for &(s, e) in &seg.live {
                match k {
                    Kind::Int64 => wire::ints(buf, s, e, &mut self.ints)?,
                    Kind::Float => wire::floats(buf, s, e, &mut self.floats)?,
                    Kind::Bytes => wire::bytes(buf, s, e, &mut self.data, &mut self.boffs)?,
                }
            }
        }
        let n = self.nvals() - before;
        if let Some(s) = &self.spec {
            let want = match s.shape {
                Shape::Scalar => Some(1),
                Shape::Fixed(m) => Some(m),
                Shape::List { .. } => None,
            };
            if let Some(m) = want {
                if n != m && !(n == 0 && s.shape == Shape::Scalar && s.nullable && s.empty_is_null && step.is_none()) {
                    let says = if s.shape == Shape::Scalar { "one".to_string() } else { m.to_string() };
                    let at = match step {
                        Some(st) => format!("step {} of record {}", st, rec),
                        None => format!("record {}", rec),
                    };
                    return Err(DErr::Schema(format!("feature '{}' has {} values in {} where the schema says {}", self.name, n, at, says)));
                }
            }
            if let Some((lo, hi)) = s.leaf.range() {
                for &v in &self.ints[before..] {
                    if (v as i128) < lo || (v as i128) > hi {
                        return Err(DErr::Schema(format!(
                            "feature '{}' value {} in record {} does not fit {}",
                            self.name, v, rec, s.leaf_name
                        )));
                    }
                }
            }
            if let Leaf::Bin { utf8: true, .. } = s.leaf {
                for i in before..self.boffs.len() - 1 {
                    if std::str::from_utf8(&self.data[self.boffs[i] as usize..self.boffs[i + 1] as usize]).is_err() {
                        return Err(DErr::Schema(format!(
                            "feature '{}' value in record {} is not UTF-8 (the schema says {})",
                            self.name, rec, s.leaf_name
                        )));
                    }
                }
            }
        } else {
            // inference statistics
            if self.utf8 && self.kind == Some(Kind::Bytes) {
                for i in before..self.boffs.len() - 1 {
                    if std::str::from_utf8(&self.data[self.boffs[i] as usize..self.boffs[i + 1] as usize]).is_err() {
                        self.utf8 = false;
                        self.first_bad_utf8 = Some(rec);
                        break;
                    }
                }
            }
            if self.seq {
                self.step_seen += 1;
            }
            match self.len_first {
                None => self.len_first = Some(n),
                Some(f) if f != n => self.len_same = false,
                _ => {}
            }
        }
        Ok(n)
    }
}

pub struct Decoder {
    pub cols: Vec<Col>,
    index: HashMap<Vec<u8>, usize>,
    infer: bool,
    strict: bool, // with a schema: a feature it does not name is an error, not ignored
    sequence: bool,
    bytes_as: String,
    pub rows_total: usize,
    rows_batch: usize,
    // per record scratch
    slots: Vec<Option<(usize, usize)>>,
    entry_values: Vec<(usize, usize)>,
    values_store: Vec<(usize, usize)>,
    seg: Segments,
    scratch: Scratch,
    order: Vec<usize>,
    guess: Vec<usize>,
    entry_no: usize,
}

impl Decoder {
    pub fn new(specs: Option<Vec<(Spec, bool)>>, sequence: bool, bytes_as: String) -> Decoder {
        Decoder::with_strict(specs, sequence, bytes_as, false)
    }

    /// `strict` (with a schema): features the schema does not name, and empty value lists under
    /// scalar columns, are schema errors instead of being ignored / read as null. Used after a
    /// schema inferred from a sample, so every later record must fit it exactly.
    pub fn with_strict(specs: Option<Vec<(Spec, bool)>>, sequence: bool, bytes_as: String, strict: bool) -> Decoder {
        let infer = specs.is_none();
        let strict = strict && !infer;
        let mut cols = Vec::new();
        let mut index = HashMap::new();
        for (mut spec, seq) in specs.unwrap_or_default() {
            spec.empty_is_null = !strict;
            let name = spec.field.name().clone();
            index.insert(name.as_bytes().to_vec(), cols.len());
            cols.push(Col::new(name, seq, Some(spec)));
        }
        Decoder {
            cols,
            index,
            infer,
            strict,
            sequence,
            bytes_as,
            rows_total: 0,
            rows_batch: 0,
            slots: Vec::new(),
            entry_values: Vec::new(),
            values_store: Vec::new(),
            seg: Segments::new(),
            scratch: Scratch::new(),
            order: Vec::new(),
            guess: Vec::new(),
            entry_no: 0,
        }
    }

    fn column(&mut self, key: &[u8], seq: bool) -> Option<usize> {
        // records of one dataset list their features in the same order: try the column the
        // k-th entry of the previous record matched before hashing the name
        let k = self.entry_no;
        self.entry_no += 1;
        if let Some(&g) = self.guess.get(k) {
            if g < self.cols.len() && self.cols[g].seq == seq && self.cols[g].name.as_bytes() == key {
                return Some(g);
            }
        }
        let found = self.column_slow(key, seq);
        if let Some(i) = found {
            if self.guess.len() <= k {
                self.guess.resize(k + 1, usize::MAX);
            }
            self.guess[k] = i;
        }
        found
    }

    fn column_slow(&mut self, key: &[u8], seq: bool) -> Option<usize> {
        if let Some(&i) = self.index.get(key) {
            if self.cols[i].seq == seq {
                return Some(i);
            }
            if !self.infer {
                return None;
            }
        }
        if !self.infer {
            return None;
        }
        // inference: context and feature-list namespaces are separate
        let mut k = key.to_vec();
        if seq {
            k.insert(0, 0xFF); // not UTF-8, so never a real key
        }
        if let Some(&i) = self.index.get(&k) {
            return Some(i);
        }
        let mut col = Col::new(String::from_utf8(key.to_vec()).unwrap(), seq, None);
        for _ in 0..self.rows_batch {
            col.offs.push(0);
            col.valid.push(false);
            col.nulls += 1;
        }
        let i = self.cols.len();
        self.cols.push(col);
        self.slots.push(None);
        self.index.insert(k, i);
        Some(i)
    }

    /// Decode one serialized record. A malformed record is reported as such even when a schema
    /// problem shows first (the pure path parses the whole record before looking at values).
    pub fn add(&mut self, buf: &[u8], rec: usize) -> DResult<()> {
        match self.add_inner(buf, rec) {
            Err(DErr::Schema(m)) => {
                let mut v = Decoder::new(Some(Vec::new()), self.sequence, String::new());
                match v.add_inner(buf, rec) {
                    Err(DErr::Malformed(x)) => Err(DErr::Malformed(x)),
                    _ => Err(DErr::Schema(m)),
                }
            }
            other => other,
        }
    }

    fn add_inner(&mut self, buf: &[u8], rec: usize) -> DResult<()> {
        self.entry_no = 0;
        self.slots.clear();
        self.slots.resize(self.cols.len(), None);
        self.values_store.clear();
        let end = buf.len();
        // collect entries: (column -> range into values_store); validate what is not kept
        let mut pos = 0;
        while pos < end {
            let (field, w) = wire::tag(buf, &mut pos)?;
            if w != 2 {
                wire::skip(buf, &mut pos, end, field, w, 0)?;
                continue;
            }
            let e = wire::delimited(buf, &mut pos, end)?;
            let which = match (field, self.sequence) {
                (1, _) => Some(false),
                (2, true) => Some(true),
                _ => None,
            };
            if let Some(seq) = which {
                self.map(buf, pos, e, seq)?;
            }
            pos = e;
        }
        // emit every column in schema order
        for c in 0..self.cols.len() {
            let slot = self.slots[c];
            match slot {
                None => self.cols[c].push_null(rec)?,
                Some((a, b)) => {
                    if self.cols[c].seq {
                        self.emit_list(buf, c, a, b, rec)?;
                    } else {
                        self.seg.clear();
                        for i in a..b {
                            let (s, e) = self.values_store[i];
                            wire::feature_segments(buf, s, e, &mut self.seg, &mut self.scratch)?;
                        }
                        let col = &mut self.cols[c];
                        let n = col.feature(buf, &self.seg, rec, None)?;
                        col.seen += 1;
                        col.offs.push(col.nvals() as i64);
                        // an empty list under a (nullable) scalar column is null
                        let empty_scalar = n == 0 && matches!(&col.spec, Some(s) if s.shape == Shape::Scalar);
                        col.valid.push(!empty_scalar);
                        col.nulls += empty_scalar as usize;
                    }
                }
            }
        }
        self.rows_batch += 1;
        self.rows_total += 1;
        Ok(())
    }

    fn map(&mut self, buf: &[u8], start: usize, end: usize, seq: bool) -> DResult<()> {
        let mut pos = start;
        while pos < end {
            let (field, w) = wire::tag(&buf[..end], &mut pos)?;
            if w != 2 {
                wire::skip(buf, &mut pos, end, field, w, 0)?;
                continue;
            }
            let e = wire::delimited(buf, &mut pos, end)?;
            if field == 1 {
                let col = match wire::map_entry(buf, pos, e, &mut self.entry_values)? {
                    Some(key) => {
                        let c = self.column(key, seq);
                        if c.is_none() && self.strict {
                            let what = if seq { "feature list" } else { "feature" };
                            return Err(DErr::Schema(format!(
                                "{} '{}' in record {} is not in the schema",
                                what,
                                String::from_utf8_lossy(key),
                                self.rows_total
                            )));
                        }
                        c
                    }
                    None => None, // kept out of the map by upb: only validated
                };
                // a replaced entry is still parsed (validated), like upb does
                let old = col.and_then(|c| self.slots[c].take());
                if let Some((a, b)) = old {
                    for i in a..b {
                        let (s, e2) = self.values_store[i];
                        self.validate_value(buf, s, e2, seq)?;
                    }
                }
                match col {
                    Some(c) => {
                        let a = self.values_store.len();
                        self.values_store.extend_from_slice(&self.entry_values);
                        self.slots[c] = Some((a, self.values_store.len()));
                    }
                    None => {
                        for i in 0..self.entry_values.len() {
                            let (s, e2) = self.entry_values[i];
                            self.validate_value(buf, s, e2, seq)?;
                        }
                    }
                }
            }
            pos = e;
        }
        Ok(())
    }

    fn validate_value(&mut self, buf: &[u8], s: usize, e: usize, seq: bool) -> DResult<()> {
        if seq {
            let (seg, scratch) = (&mut self.seg, &mut self.scratch);
            wire::fields(buf, s, e, |f, a, b| {
                if f == 1 {
                    seg.clear();
                    wire::feature_segments(buf, a, b, seg, scratch)?;
                    if let Some(k) = seg.kind {
                        for &(x, y) in &seg.live {
                            scratch.validate(buf, k, x, y)?;
                        }
                    }
                }
                Ok(())
            })?;
        } else {
            self.seg.clear();
            wire::feature_segments(buf, s, e, &mut self.seg, &mut self.scratch)?;
            if let Some(k) = self.seg.kind {
                for &(x, y) in &self.seg.live {
                    self.scratch.validate(buf, k, x, y)?;
                }
            }
        }
        Ok(())
    }

    fn emit_list(&mut self, buf: &[u8], c: usize, a: usize, b: usize, rec: usize) -> DResult<()> {
        // steps: field 1 of each FeatureList value (merged value fields concatenate)
        let mut nsteps = 0usize;
        for i in a..b {
            let (s, e) = self.values_store[i];
            let mut pos = s;
            while pos < e {
                let (field, w) = wire::tag(&buf[..e], &mut pos)?;
                if w != 2 {
                    wire::skip(buf, &mut pos, e, field, w, 0)?;
                    continue;
                }
                let fe = wire::delimited(buf, &mut pos, e)?;
                if field == 1 {
                    self.seg.clear();
                    wire::feature_segments(buf, pos, fe, &mut self.seg, &mut self.scratch)?;
                    let col = &mut self.cols[c];
                    col.feature(buf, &self.seg, rec, Some(nsteps))?;
                    col.steps.push(col.nvals() as i64);
                    nsteps += 1;
                }
                pos = fe;
            }
        }
        let col = &mut self.cols[c];
        col.seen += 1;
        col.offs.push((col.steps.len() - 1) as i64);
        col.valid.push(true);
        Ok(())
    }

    /// Column order of the output: schema order, or (inference) sorted context names then
    /// sorted feature-list names, like the pure path.
    fn output_order(&mut self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.cols.len()).collect();
        if self.infer {
            order.sort_by(|&x, &y| (self.cols[x].seq, &self.cols[x].name).cmp(&(self.cols[y].seq, &self.cols[y].name)));
        }
        self.order = order.clone();
        order
    }

    /// Inferred Arrow type of an inference column (see arrow.py's module docstring).
    fn inferred(&self, col: &Col) -> Result<Spec, String> {
        let kind = col.kind.unwrap_or(Kind::Bytes);
        let string = kind == Kind::Bytes && (self.bytes_as == "string" || (self.bytes_as == "auto" && col.utf8 && col.kind.is_some()));
        if string && !col.utf8 {
            return Err(format!(
                "feature '{}' value in record {} is not UTF-8 (the schema says string)",
                col.name,
                col.first_bad_utf8.unwrap_or(0)
            ));
        }
        let mut leaf = match kind {
            Kind::Int64 => Leaf::I64,
            Kind::Float => Leaf::F32,
            Kind::Bytes => Leaf::Bin { large: false, utf8: string },
        };
        let shape = if col.seq && col.step_seen == 0 {
            leaf = Leaf::Bin { large: false, utf8: false };
            Shape::List { large: false }
        } else {
            match (col.len_same, col.len_first) {
                (true, Some(1)) if !col.seq => Shape::Scalar,
                (true, Some(n)) if n > 1 => Shape::Fixed(n),
                _ => Shape::List { large: false },
            }
        };
        let item = Arc::new(Field::new("item", leaf.data_type(), true));
        let inner = match shape {
            Shape::Scalar => leaf.data_type(),
            Shape::Fixed(n) => DataType::FixedSizeList(item, n as i32),
            Shape::List { .. } => DataType::List(item),
        };
        let nullable = col.seen < self.rows_total;
        let field = if col.seq {
            let md = [("tfhadoop.feature_list".to_string(), "1".to_string())].into_iter().collect();
            Field::new(&col.name, DataType::List(Arc::new(Field::new("item", inner, true))), nullable).with_metadata(md)
        } else {
            Field::new(&col.name, inner, nullable)
        };
        Ok(Spec { leaf, shape, outer_large: false, nullable, type_name: String::new(), leaf_name: String::new(), field, empty_is_null: true })
    }

    /// The schema inferred so far (inference mode).
    pub fn schema_fields(&mut self) -> Result<Vec<Field>, String> {
        let order = self.output_order();
        order.iter().map(|&i| self.inferred(&self.cols[i]).map(|s| s.field)).collect()
    }

    /// Forget the values of this batch (keeping column definitions and inference statistics).
    pub fn clear(&mut self) {
        for c in &mut self.cols {
            c.clear();
        }
        self.rows_batch = 0;
    }

    /// The batch decoded so far as (fields, struct ArrayData); clears the values.
    pub fn finish(&mut self) -> Result<(Fields, ArrayData), String> {
        let order = self.output_order();
        let mut fields = Vec::new();
        let mut children = Vec::new();
        for &i in &order {
            let spec = match &self.cols[i].spec {
                Some(s) => s.clone(),
                None => self.inferred(&self.cols[i])?,
            };
            let data = build(&self.cols[i], &spec, self.rows_batch)?;
            fields.push(spec.field.clone());
            children.push(data);
        }
        let fields = Fields::from(fields);
        let data = ArrayData::builder(DataType::Struct(fields.clone()))
            .len(self.rows_batch)
            .child_data(children)
            .build()
            .map_err(|e| e.to_string())?;
        self.clear();
        Ok((fields, data))
    }
}

fn bitmap(bits: impl Iterator<Item = bool>) -> Buffer {
    BooleanBuffer::from_iter(bits).into_inner()
}

fn nulls_of(col: &Col) -> Option<Buffer> {
    if col.nulls == 0 {
        None
    } else {
        Some(NullBuffer::from(col.valid.clone()).into_inner().into_inner())
    }
}

/// Leaf values (`idx`: which of the column's values, in order; None = placeholder) as ArrayData.
fn leaf_data(col: &Col, leaf: Leaf, idx: Option<&[Option<usize>]>) -> Result<ArrayData, String> {
    let n = idx.map(|x| x.len()).unwrap_or_else(|| col.nvals());
    let dt = leaf.data_type();
    let b = ArrayData::builder(dt).len(n);
    macro_rules! ints {
        ($t:ty) => {{
            let v: Vec<$t> = match idx {
                None => col.ints.iter().map(|&x| x as $t).collect(),
                Some(ix) => ix.iter().map(|o| o.map(|j| col.ints[j] as $t).unwrap_or_default()).collect(),
            };
            b.add_buffer(Buffer::from_vec(v))
        }};
    }
    let b = match leaf {
        Leaf::I8 => ints!(i8),
        Leaf::I16 => ints!(i16),
        Leaf::I32 => ints!(i32),
        Leaf::I64 => {
            if idx.is_none() {
                b.add_buffer(Buffer::from_vec(col.ints.clone()))
            } else {
                ints!(i64)
            }
        }
        Leaf::U8 => ints!(u8),
        Leaf::U16 => ints!(u16),
        Leaf::U32 => ints!(u32),
        Leaf::U64 => ints!(u64),
        Leaf::Bool => match idx {
            None => b.add_buffer(bitmap(col.ints.iter().map(|&x| x != 0))),
            Some(ix) => b.add_buffer(bitmap(ix.iter().map(|o| o.map(|j| col.ints[j] != 0).unwrap_or(false)))),
        },
        Leaf::F32 => {
            let v: Vec<f32> = match idx {
                None => col.floats.clone(),
                Some(ix) => ix.iter().map(|o| o.map(|j| col.floats[j]).unwrap_or(0.0)).collect(),
            };
            b.add_buffer(Buffer::from_vec(v))
        }
        Leaf::F64 => {
            let v: Vec<f64> = match idx {
                None => col.floats.iter().map(|&x| x as f64).collect(),
                Some(ix) => ix.iter().map(|o| o.map(|j| col.floats[j] as f64).unwrap_or(0.0)).collect(),
            };
            b.add_buffer(Buffer::from_vec(v))
        }
        Leaf::Bin { large, .. } => {
            let (offs, data): (Vec<i64>, Vec<u8>) = match idx {
                None => (col.boffs.clone(), col.data.clone()),
                Some(ix) => {
                    let mut o = vec![0i64];
                    let mut d = Vec::new();
                    for x in ix {
                        if let Some(j) = x {
                            d.extend_from_slice(&col.data[col.boffs[*j] as usize..col.boffs[*j + 1] as usize]);
                        }
                        o.push(d.len() as i64);
                    }
                    (o, d)
                }
            };
            let ob = offsets(offs, large, &col.name)?;
            b.add_buffer(ob).add_buffer(Buffer::from_vec(data))
        }
    };
    b.build().map_err(|e| e.to_string())
}

fn offsets(offs: Vec<i64>, large: bool, name: &str) -> Result<Buffer, String> {
    if large {
        return Ok(Buffer::from_vec(offs));
    }
    if offs.last().copied().unwrap_or(0) > i32::MAX as i64 {
        return Err(format!("feature '{}' holds more than 2 GiB (or 2^31 items) in one batch: use a large_ type in the schema", name));
    }
    Ok(Buffer::from_vec(offs.into_iter().map(|x| x as i32).collect::<Vec<i32>>()))
}


/// The column's ArrayData in the type `spec` says (its field type).
fn build(col: &Col, spec: &Spec, rows: usize) -> Result<ArrayData, String> {
    let ftype = spec.field.data_type().clone();
    let nulls = nulls_of(col);
    if col.seq {
        // list<inner>: offsets = steps per record; inner over the values per step
        let (inner_t, _) = match &ftype {
            DataType::List(f) | DataType::LargeList(f) => (f.data_type().clone(), ()),
            _ => unreachable!(),
        };
        let nsteps = col.steps.len() - 1;
        let values = leaf_data(col, spec.leaf, None)?;
        let inner = match spec.shape {
            Shape::Fixed(_) => ArrayData::builder(inner_t).len(nsteps).child_data(vec![values]).build(),
            Shape::List { large } => ArrayData::builder(inner_t)
                .len(nsteps)
                .add_buffer(offsets(col.steps.clone(), large, &col.name)?)
                .child_data(vec![values])
                .build(),
            Shape::Scalar => unreachable!(),
        }
        .map_err(|e| e.to_string())?;
        let _ = Shape::Fixed(0);
        return ArrayData::builder(ftype)
            .len(rows)
            .null_bit_buffer(nulls)
            .add_buffer(offsets(col.offs.clone(), spec.outer_large, &col.name)?)
            .child_data(vec![inner])
            .build()
            .map_err(|e| e.to_string());
    }
    match spec.shape {
        Shape::Scalar => {
            let values = if col.nulls == 0 {
                leaf_data(col, spec.leaf, None)?
            } else {
                let ix: Vec<Option<usize>> = (0..rows)
                    .map(|r| if col.offs[r + 1] > col.offs[r] { Some(col.offs[r] as usize) } else { None })
                    .collect();
                leaf_data(col, spec.leaf, Some(&ix))?
            };
            values.into_builder().null_bit_buffer(nulls).build().map_err(|e| e.to_string())
        }
        Shape::Fixed(n) => {
            let values = if col.nulls == 0 {
                leaf_data(col, spec.leaf, None)?
            } else {
                let mut ix = Vec::with_capacity(rows * n);
                for r in 0..rows {
                    let (a, b) = (col.offs[r] as usize, col.offs[r + 1] as usize);
                    if b > a {
                        ix.extend((a..b).map(Some));
                    } else {
                        ix.extend(std::iter::repeat(None).take(n));
                    }
                }
                leaf_data(col, spec.leaf, Some(&ix))?
            };
            ArrayData::builder(ftype).len(rows).null_bit_buffer(nulls).child_data(vec![values]).build().map_err(|e| e.to_string())
        }
        Shape::List { large } => {
            let values = leaf_data(col, spec.leaf, None)?;
            ArrayData::builder(ftype)
                .len(rows)
                .null_bit_buffer(nulls)
                .add_buffer(offsets(col.offs.clone(), large, &col.name)?)
                .child_data(vec![values])
                .build()
                .map_err(|e| e.to_string())
        }
    }
}
