//! `tfhadoop.connectors._tfarrow`: tf.train.Example / SequenceExample <-> Arrow in Rust, handed
//! to and from pyarrow through the Arrow C data interface (PyCapsules, no copies). The Python
//! wrapper is connectors/python/tfhadoop/connectors/arrow.py; it owns the API, this module only the hot loops.

mod crc;
mod decode;
mod enc;
mod wire;

use std::ffi::CString;

use arrow_data::ffi::FFI_ArrowArray;
use arrow_schema::ffi::FFI_ArrowSchema;
use arrow_schema::{DataType, Schema};
use pyo3::create_exception;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyList, PyTuple};

create_exception!(_tfarrow, DecodeError, PyValueError, "args: (message, record index, malformed: bool)");

fn capsule_ptr<T>(cap: &Bound<PyCapsule>, name: &str) -> PyResult<*mut T> {
    let ok = cap.name()?.map(|n| n.to_bytes() == name.as_bytes()).unwrap_or(false);
    if !ok {
        return Err(PyTypeError::new_err(format!("expected an {name} PyCapsule")));
    }
    Ok(cap.pointer() as *mut T)
}

fn import_schema(cap: &Bound<PyCapsule>) -> PyResult<Schema> {
    let ptr = capsule_ptr::<FFI_ArrowSchema>(cap, "arrow_schema")?;
    Schema::try_from(unsafe { &*ptr }).map_err(|e| PyValueError::new_err(e.to_string()))
}

fn export<'py>(py: Python<'py>, dt: DataType, data: &arrow_data::ArrayData) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
    let schema = FFI_ArrowSchema::try_from(&dt).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let array = FFI_ArrowArray::new(data);
    let s = PyCapsule::new(py, schema, Some(CString::new("arrow_schema").unwrap()))?;
    let a = PyCapsule::new(py, array, Some(CString::new("arrow_array").unwrap()))?;
    Ok((s, a))
}

/// Streaming decoder: `add(list of bytes)` any number of times, `finish()` for the batch so far.
#[pyclass]
struct Decoder {
    inner: decode::Decoder,
    sequence: bool,
}

#[pymethods]
impl Decoder {
    /// schema: an arrow_schema capsule (None: infer); feature_lists / type_names / leaf_names:
    /// one entry per schema field (which are SequenceExample feature lists; the types as
    /// pyarrow prints them, for messages).
    /// strict: see decode::Decoder::with_strict (a schema inferred from a sample).
    #[new]
    #[pyo3(signature = (schema=None, feature_lists=None, type_names=None, leaf_names=None, sequence=false, bytes_as="auto".to_string(), strict=false))]
    fn new(
        schema: Option<&Bound<PyCapsule>>,
        feature_lists: Option<Vec<bool>>,
        type_names: Option<Vec<String>>,
        leaf_names: Option<Vec<String>>,
        sequence: bool,
        bytes_as: String,
        strict: bool,
    ) -> PyResult<Self> {
        let specs = match schema {
            None => None,
            Some(cap) => {
                let schema = import_schema(cap)?;
                let n = schema.fields().len();
                let fl = feature_lists.unwrap_or_else(|| vec![false; n]);
                let tn = type_names.unwrap_or_else(|| schema.fields().iter().map(|f| f.data_type().to_string()).collect());
                let ln = leaf_names.unwrap_or_else(|| tn.clone());
                let mut specs = Vec::new();
                for (i, f) in schema.fields().iter().enumerate() {
                    let spec = decode::spec_of(f, fl[i], tn[i].clone(), ln[i].clone()).map_err(PyTypeError::new_err)?;
                    specs.push((spec, fl[i]));
                }
                Some(specs)
            }
        };
        Ok(Decoder { inner: decode::Decoder::with_strict(specs, sequence, bytes_as, strict), sequence })
    }

    /// Decode serialized records (a list of bytes). Raises DecodeError(message, record, malformed).
    fn add(&mut self, py: Python<'_>, records: &Bound<PyList>) -> PyResult<()> {
        let mut bufs: Vec<&[u8]> = Vec::with_capacity(records.len());
        let items: Vec<Bound<PyBytes>> = records
            .iter()
            .map(|r| r.downcast_into::<PyBytes>().map_err(|_| PyTypeError::new_err("records must be bytes")))
            .collect::<PyResult<_>>()?;
        for b in &items {
            bufs.push(b.as_bytes());
        }
        let inner = &mut self.inner;
        let sequence = self.sequence;
        let res = py.allow_threads(|| {
            for buf in bufs {
                let rec = inner.rows_total;
                if let Err(e) = inner.add(buf, rec) {
                    return Err((e, rec));
                }
            }
            Ok(())
        });
        match res {
            Ok(()) => Ok(()),
            Err((e, rec)) => {
                let (msg, malformed) = message(e, rec, sequence);
                Err(DecodeError::new_err((msg, rec, malformed)))
            }
        }
    }

    /// Frame TFRecords in `buf[start..]` (`buf[0]` is at stream offset `base`), check both
    /// masked CRC32Cs and decode up to `max_records` of them, with no Python object per record.
    /// Returns (index after the last record taken, records taken, bad): it stops early at a
    /// record that is not whole in `buf` (the caller reads more) or whose checksum fails
    /// (`bad`; the caller re-reads that tail with the pure reader, which words the error).
    /// A decode error raises DecodeError(message, record, malformed, record's stream offset).
    #[pyo3(signature = (buf, start, base, max_records))]
    fn add_framed(&mut self, py: Python<'_>, buf: &[u8], start: usize, base: u64, max_records: usize) -> PyResult<(usize, usize, bool)> {
        let inner = &mut self.inner;
        let sequence = self.sequence;
        let res = py.allow_threads(|| {
            let (mut pos, mut n, mut bad) = (start.min(buf.len()), 0usize, false);
            while n < max_records && buf.len() - pos >= 12 {
                let head = &buf[pos..pos + 8];
                let lcrc = u32::from_le_bytes(buf[pos + 8..pos + 12].try_into().unwrap());
                if crc::masked(head) != lcrc {
                    bad = true;
                    break;
                }
                let len = u64::from_le_bytes(head.try_into().unwrap());
                let avail = (buf.len() - pos - 12) as u64;
                if avail < 4 || len > avail - 4 {
                    break;
                }
                let len = len as usize;
                let data = &buf[pos + 12..pos + 12 + len];
                let dcrc = u32::from_le_bytes(buf[pos + 12 + len..pos + 16 + len].try_into().unwrap());
                if crc::masked(data) != dcrc {
                    bad = true;
                    break;
                }
                let rec = inner.rows_total;
                if let Err(e) = inner.add(data, rec) {
                    return Err((e, rec, base + pos as u64));
                }
                pos += 16 + len;
                n += 1;
            }
            Ok((pos, n, bad))
        });
        match res {
            Ok(r) => Ok(r),
            Err((e, rec, offset)) => {
                let (msg, malformed) = message(e, rec, sequence);
                Err(DecodeError::new_err((msg, rec, malformed, offset)))
            }
        }
    }

    /// Records added so far (all batches).
    #[getter]
    fn rows(&self) -> usize {
        self.inner.rows_total
    }

    /// Continue record numbering (messages) from another decoder's count.
    #[setter]
    fn set_rows(&mut self, rows: usize) {
        self.inner.rows_total = rows;
    }

    /// (arrow_schema, arrow_array) capsules of the struct array of this batch; starts a new batch.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let (fields, data) = self.inner.finish().map_err(PyValueError::new_err)?;
        export(py, DataType::Struct(fields), &data)
    }

    /// The inferred schema so far (an arrow_schema capsule of a struct type).
    fn schema<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let fields = self.inner.schema_fields().map_err(PyValueError::new_err)?;
        let dt = DataType::Struct(fields.into());
        let s = FFI_ArrowSchema::try_from(&dt).map_err(|e| PyValueError::new_err(e.to_string()))?;
        PyCapsule::new(py, s, Some(CString::new("arrow_schema").unwrap()))
    }

    /// Drop the values decoded so far (inference statistics stay): a schema-only pass.
    fn clear(&mut self) {
        self.inner.clear();
    }
}

fn message(e: decode::DErr, rec: usize, sequence: bool) -> (String, bool) {
    let what = if sequence { "SequenceExample" } else { "Example" };
    match e {
        decode::DErr::Malformed(m) => (format!("record {rec} is not a serialized {what}: {m}"), true),
        decode::DErr::Schema(m) => (m, false),
    }
}

/// The encoder's columns for a record batch given as its C data interface capsules.
/// `feature_lists[i]`: column i is a SequenceExample feature list. `order`: column indexes in
/// the order their features are written.
fn encoder_columns<'a>(
    s: &'a Schema,
    array: &'a Bound<'_, PyCapsule>,
    feature_lists: &[bool],
    order: &[usize],
) -> PyResult<(Vec<enc::Column<'a>>, usize)> {
    let arr = unsafe { &*capsule_ptr::<FFI_ArrowArray>(array, "arrow_array")? };
    if arr.is_released() {
        return Err(PyValueError::new_err("the Arrow array was already released"));
    }
    let mut cols = Vec::new();
    for &i in order {
        let f = &s.fields()[i];
        cols.push(enc::Column::new(f.name(), f.data_type(), arr.child(i), feature_lists[i], arr.offset()).map_err(PyTypeError::new_err)?);
    }
    Ok((cols, arr.len()))
}

/// Serialized records, one per row of a record batch (see `encoder_columns`): a list of bytes, or
/// with `framed` the records already framed as TFRecords (length, masked CRC32C of the length,
/// data, masked CRC32C of the data) in one buffer plus each record's start in it (little-endian
/// u64s), so a writer takes a whole batch in one call instead of framing record by record in Python.
#[pyfunction]
#[pyo3(signature = (schema, array, feature_lists, order, sequence=false, framed=false))]
fn encode<'py>(
    py: Python<'py>,
    schema: &Bound<'py, PyCapsule>,
    array: &Bound<'py, PyCapsule>,
    feature_lists: Vec<bool>,
    order: Vec<usize>,
    sequence: bool,
    framed: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let s = import_schema(schema)?;
    let (cols, rows) = encoder_columns(&s, array, &feature_lists, &order)?;
    if framed {
        let mut buf = Vec::new();
        let mut starts = Vec::with_capacity(rows * 8);
        enc::encode_rows(&cols, rows, sequence, &mut |rec| {
            starts.extend_from_slice(&(buf.len() as u64).to_le_bytes());
            let len = (rec.len() as u64).to_le_bytes();
            buf.extend_from_slice(&len);
            buf.extend_from_slice(&crc::masked(&len).to_le_bytes());
            buf.extend_from_slice(rec);
            buf.extend_from_slice(&crc::masked(rec).to_le_bytes());
        })
        .map_err(PyValueError::new_err)?;
        return Ok(PyTuple::new(py, [PyBytes::new(py, &buf), PyBytes::new(py, &starts)])?.into_any());
    }
    let out = PyList::empty(py);
    let mut err = None;
    enc::encode_rows(&cols, rows, sequence, &mut |rec| {
        if err.is_none() {
            if let Err(e) = out.append(PyBytes::new(py, rec)) {
                err = Some(e);
            }
        }
    })
    .map_err(PyValueError::new_err)?;
    match err {
        Some(e) => Err(e),
        None => Ok(out.into_any()),
    }
}

/// Decode without keeping anything (for fuzzing): None when the bytes parse, else the message.
#[pyfunction]
#[pyo3(signature = (data, sequence=false))]
fn check(data: &[u8], sequence: bool) -> Option<String> {
    let mut d = decode::Decoder::new(None, sequence, "auto".to_string());
    match d.add(data, 0) {
        Ok(()) => None,
        Err(decode::DErr::Malformed(m)) => Some(m.to_string()),
        Err(decode::DErr::Schema(_)) => None, // a well-formed record (inference saw a kind conflict)
    }
}

#[pymodule]
fn _tfarrow(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Decoder>()?;
    m.add_function(wrap_pyfunction!(encode, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add("DecodeError", m.py().get_type::<DecodeError>())?;
    Ok(())
}
