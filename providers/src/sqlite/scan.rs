//! The physical scan: one SQLite query per partition (a rowid range), run on a blocking thread
//! with its own read-only connection, turned into `RecordBatch`es of the session's batch size and
//! streamed through a small bounded channel, so memory stays at a few batches whatever the table
//! size.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder,
    TimestampMillisecondBuilder,
};
use datafusion::arrow::datatypes::{DataType, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use rusqlite::types::{Value, ValueRef};
use rusqlite::{Connection, OpenFlags};

/// What one scan reads: the same SQL for every partition, each bounded to its rowid range.
#[derive(Debug, Clone)]
pub struct ScanSpec {
    /// The archive file.
    pub path: PathBuf,
    /// Table or view name.
    pub table: String,
    /// Output schema (the projected columns, in order).
    pub schema: SchemaRef,
    /// The pushed-down condition (`None`: every row).
    pub filter: Option<String>,
    /// Its parameters.
    pub params: Vec<Value>,
    /// Rows each partition may stop after.
    pub limit: Option<usize>,
    /// Rowid ranges, one per partition (`None`: the whole table in one partition).
    pub ranges: Vec<Option<(i64, i64)>>,
}

impl ScanSpec {
    /// The SQL one partition runs (rowid bounds as the two last parameters when ranged).
    pub fn sql(&self, ranged: bool) -> String {
        let columns = if self.schema.fields().is_empty() {
            "1".to_string()
        } else {
            self.schema
                .fields()
                .iter()
                .map(|f| format!("\"{}\"", f.name().replace('"', "\"\"")))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut conditions = Vec::new();
        if let Some(f) = &self.filter {
            conditions.push(f.clone());
        }
        if ranged {
            conditions.push("rowid BETWEEN ? AND ?".to_string());
        }
        let mut sql = format!("SELECT {columns} FROM \"{}\"", self.table);
        if !conditions.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&conditions.join(" AND "));
        }
        if let Some(n) = self.limit {
            sql.push_str(&format!(" LIMIT {n}"));
        }
        sql
    }
}

/// The scan node: shows its SQL pushdown in `EXPLAIN`.
#[derive(Debug)]
pub struct SqliteScanExec {
    spec: Arc<ScanSpec>,
    properties: Arc<PlanProperties>,
}

impl SqliteScanExec {
    /// A scan of `spec`.
    pub fn new(spec: ScanSpec) -> Self {
        let partitions = spec.ranges.len().max(1);
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&spec.schema)),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        SqliteScanExec {
            spec: Arc::new(spec),
            properties: Arc::new(properties),
        }
    }

    /// What the scan reads.
    pub fn spec(&self) -> &ScanSpec {
        &self.spec
    }
}

impl DisplayAs for SqliteScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let columns: Vec<&str> = self
            .spec
            .schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        write!(
            f,
            "SqliteScanExec: table={}, partitions={}, columns=[{}]",
            self.spec.table,
            self.spec.ranges.len().max(1),
            columns.join(", ")
        )?;
        if let Some(filter) = &self.spec.filter {
            let params: Vec<String> = self.spec.params.iter().map(show_value).collect();
            write!(f, ", where={filter} [{}]", params.join(", "))?;
        }
        if let Some(limit) = self.spec.limit {
            write!(f, ", limit={limit}")?;
        }
        Ok(())
    }
}

fn show_value(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Integer(i) => i.to_string(),
        Value::Real(r) => r.to_string(),
        Value::Text(t) => format!("'{t}'"),
        Value::Blob(b) => format!("<{} bytes>", b.len()),
    }
}

impl ExecutionPlan for SqliteScanExec {
    fn name(&self) -> &str {
        "SqliteScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "SqliteScanExec has no children".into(),
            ))
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let range = match self.spec.ranges.get(partition) {
            Some(range) => *range,
            None if partition == 0 && self.spec.ranges.is_empty() => None,
            None => {
                return Err(DataFusionError::Internal(format!(
                    "SqliteScanExec: no partition {partition}"
                )));
            }
        };
        let batch_size = context.session_config().batch_size().max(1);
        let spec = Arc::clone(&self.spec);
        let (sender, receiver) = tokio::sync::mpsc::channel::<Result<RecordBatch>>(2);
        tokio::task::spawn_blocking(move || {
            if let Err(e) = read_partition(&spec, range, batch_size, &sender) {
                let _ = sender.blocking_send(Err(e));
            }
        });
        let stream = futures::stream::unfold(receiver, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.spec.schema),
            stream,
        )))
    }
}

pub(crate) fn sqlite_error(e: rusqlite::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// SQLite virtual machine steps between checks whether the scan's reader is still there.
const CANCEL_CHECK_STEPS: std::os::raw::c_int = 100_000;

/// Reads one partition and sends its batches; stops quietly when the receiver is gone, also
/// in the middle of a statement that returns no row for a long while (a selective filter on a
/// big table): a progress handler interrupts SQLite once nobody is reading.
fn read_partition(
    spec: &ScanSpec,
    range: Option<(i64, i64)>,
    batch_size: usize,
    sender: &tokio::sync::mpsc::Sender<Result<RecordBatch>>,
) -> Result<()> {
    let conn = Connection::open_with_flags(
        &spec.path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sqlite_error)?;
    conn.pragma_update(None, "case_sensitive_like", true)
        .map_err(sqlite_error)?;
    let reader = sender.clone();
    conn.progress_handler(CANCEL_CHECK_STEPS, Some(move || reader.is_closed()));
    let sql = spec.sql(range.is_some());
    let mut stmt = conn.prepare(&sql).map_err(sqlite_error)?;
    let mut params = spec.params.clone();
    if let Some((low, high)) = range {
        params.push(Value::Integer(low));
        params.push(Value::Integer(high));
    }
    let mut rows = stmt
        .query(rusqlite::params_from_iter(params.iter()))
        .map_err(sqlite_error)?;
    let mut batch = BatchBuilder::new(Arc::clone(&spec.schema), batch_size);
    loop {
        let row = match rows.next() {
            Ok(Some(row)) => row,
            Ok(None) => break,
            // Interrupted because the query was dropped: nobody to tell.
            Err(_) if sender.is_closed() => return Ok(()),
            Err(e) => return Err(sqlite_error(e)),
        };
        batch.append(row)?;
        if batch.len() == batch_size && sender.blocking_send(batch.finish()).is_err() {
            return Ok(());
        }
    }
    if batch.len() > 0 {
        let _ = sender.blocking_send(batch.finish());
    }
    Ok(())
}

/// Rows of SQLite results gathered into `RecordBatch`es of one schema (the query selects the
/// schema's columns in order).
pub(crate) struct BatchBuilder {
    schema: SchemaRef,
    builders: Vec<ColumnBuilder>,
    rows: usize,
}

impl BatchBuilder {
    /// A builder of batches of `schema`, sized for `capacity` rows.
    pub(crate) fn new(schema: SchemaRef, capacity: usize) -> Self {
        let builders = schema
            .fields()
            .iter()
            .map(|f| ColumnBuilder::new(f.data_type(), capacity))
            .collect();
        BatchBuilder {
            schema,
            builders,
            rows: 0,
        }
    }

    /// Adds one result row.
    pub(crate) fn append(&mut self, row: &rusqlite::Row<'_>) -> Result<()> {
        for (i, builder) in self.builders.iter_mut().enumerate() {
            builder.append(row.get_ref(i).map_err(sqlite_error)?);
        }
        self.rows += 1;
        Ok(())
    }

    /// Rows gathered since the last batch.
    pub(crate) fn len(&self) -> usize {
        self.rows
    }

    /// The gathered rows as a batch; the builder starts again empty.
    pub(crate) fn finish(&mut self) -> Result<RecordBatch> {
        let columns: Vec<ArrayRef> = self
            .builders
            .iter_mut()
            .map(ColumnBuilder::finish)
            .collect();
        let options = datafusion::arrow::record_batch::RecordBatchOptions::new()
            .with_row_count(Some(self.rows));
        self.rows = 0;
        RecordBatch::try_new_with_options(Arc::clone(&self.schema), columns, &options)
            .map_err(DataFusionError::from)
    }
}

/// An Arrow builder for one column, tolerant of SQLite's dynamic typing.
enum ColumnBuilder {
    Int(Int64Builder),
    /// A time column: epoch milliseconds in SQLite, a millisecond timestamp (with the field's
    /// time zone, UTC) in Arrow.
    Time(TimestampMillisecondBuilder),
    Float(Float64Builder),
    Bool(BooleanBuilder),
    Text(StringBuilder),
}

impl ColumnBuilder {
    fn new(data_type: &DataType, capacity: usize) -> Self {
        match data_type {
            DataType::Int64 => ColumnBuilder::Int(Int64Builder::with_capacity(capacity)),
            DataType::Timestamp(TimeUnit::Millisecond, zone) => ColumnBuilder::Time(
                TimestampMillisecondBuilder::with_capacity(capacity)
                    .with_timezone_opt(zone.clone()),
            ),
            DataType::Float64 => ColumnBuilder::Float(Float64Builder::with_capacity(capacity)),
            DataType::Boolean => ColumnBuilder::Bool(BooleanBuilder::with_capacity(capacity)),
            _ => ColumnBuilder::Text(StringBuilder::with_capacity(capacity, capacity * 16)),
        }
    }

    fn append(&mut self, value: ValueRef<'_>) {
        match self {
            ColumnBuilder::Int(b) => b.append_option(integer(value)),
            ColumnBuilder::Time(b) => b.append_option(integer(value)),
            ColumnBuilder::Float(b) => b.append_option(match value {
                ValueRef::Integer(i) => Some(i as f64),
                ValueRef::Real(r) => Some(r),
                ValueRef::Text(t) => std::str::from_utf8(t)
                    .ok()
                    .and_then(|s| s.trim().parse().ok()),
                _ => None,
            }),
            ColumnBuilder::Bool(b) => b.append_option(match value {
                ValueRef::Integer(i) => Some(i != 0),
                ValueRef::Real(r) => Some(r != 0.0),
                _ => None,
            }),
            ColumnBuilder::Text(b) => match value {
                ValueRef::Text(t) => b.append_value(String::from_utf8_lossy(t)),
                ValueRef::Integer(i) => b.append_value(i.to_string()),
                ValueRef::Real(r) => b.append_value(r.to_string()),
                ValueRef::Blob(_) | ValueRef::Null => b.append_null(),
            },
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            ColumnBuilder::Int(b) => Arc::new(b.finish()),
            ColumnBuilder::Time(b) => Arc::new(b.finish()),
            ColumnBuilder::Float(b) => Arc::new(b.finish()),
            ColumnBuilder::Bool(b) => Arc::new(b.finish()),
            ColumnBuilder::Text(b) => Arc::new(b.finish()),
        }
    }
}

/// A stored value read as an integer (a real truncated, a numeric text parsed).
fn integer(value: ValueRef<'_>) -> Option<i64> {
    match value {
        ValueRef::Integer(i) => Some(i),
        ValueRef::Real(r) => Some(r as i64),
        ValueRef::Text(t) => std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.trim().parse().ok()),
        _ => None,
    }
}
