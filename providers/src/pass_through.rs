//! A physical plan node whose output is its input: it takes no filter from above (DataFusion
//! pushes none through a node that does not say it can) and may watch the rows go by. The masked
//! search's fence (a filter on masked columns stays above the prefilter that made the rows few)
//! and the engine's aggregate-input counter are both this node.

use std::fmt;
use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::StreamExt;

/// Called with the row count of every batch that passes.
pub type RowObserver = Arc<dyn Fn(usize) + Send + Sync>;

/// The pass-through node: `input`'s partitions, order and batches unchanged.
pub struct PassThroughExec {
    name: &'static str,
    input: Arc<dyn ExecutionPlan>,
    observer: Option<RowObserver>,
    properties: Arc<PlanProperties>,
}

impl PassThroughExec {
    /// `input` under a node named `name` (in `EXPLAIN`), calling `observer` (if any) with the
    /// rows of every batch of every partition.
    pub fn new(
        name: &'static str,
        input: Arc<dyn ExecutionPlan>,
        observer: Option<RowObserver>,
    ) -> Self {
        PassThroughExec {
            name,
            properties: Arc::clone(input.properties()),
            input,
            observer,
        }
    }
}

impl fmt::Debug for PassThroughExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PassThroughExec")
            .field("name", &self.name)
            .field("input", &self.input)
            .field("observed", &self.observer.is_some())
            .finish()
    }
}

impl DisplayAs for PassThroughExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.name)
    }
}

impl ExecutionPlan for PassThroughExec {
    fn name(&self) -> &str {
        self.name
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = children
            .into_iter()
            .next()
            .ok_or_else(|| DataFusionError::Internal(format!("{} has one child", self.name)))?;
        Ok(Arc::new(PassThroughExec::new(
            self.name,
            input,
            self.observer.clone(),
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let Some(observer) = self.observer.clone() else {
            return Ok(input);
        };
        let schema = input.schema();
        let observed = input.map(move |batch| {
            if let Ok(batch) = &batch {
                observer(batch.num_rows());
            }
            batch
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, observed)))
    }
}
