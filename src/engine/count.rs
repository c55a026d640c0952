//! Counting an aggregate's input as it flows: a pass-through plan node placed between an
//! aggregate and its input (above any re-applied `Inexact` filter), so `input_rows` costs no
//! second scan. The logical node ([`CountRows`]) keeps projection pushdown working (it needs
//! exactly the columns its parent needs); the physical node ([`CountRowsExec`]) adds every
//! partition's rows to one shared [`RowCounter`] and changes nothing else.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DFSchemaRef, DataFusionError, Result};
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{
    Expr, Extension, LogicalPlan, UserDefinedLogicalNode, UserDefinedLogicalNodeCore,
};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};
use futures::StreamExt;

/// Rows counted by every partition of one [`CountRowsExec`]; read when the stream has ended.
#[derive(Debug, Clone, Default)]
pub struct RowCounter(Arc<AtomicU64>);

impl RowCounter {
    /// The rows counted so far.
    pub fn get(&self) -> u64 {
        self.0.load(AtomicOrdering::Relaxed)
    }

    fn add(&self, rows: usize) {
        self.0.fetch_add(rows as u64, AtomicOrdering::Relaxed);
    }
}

// One counter is one node: identity is the shared cell, not its current value.
impl PartialEq for RowCounter {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for RowCounter {}

impl Hash for RowCounter {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.0).hash(state);
    }
}

impl PartialOrd for RowCounter {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(Arc::as_ptr(&self.0).cmp(&Arc::as_ptr(&other.0)))
    }
}

/// The logical pass-through node: its output is its input, counted into `counter`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd)]
pub struct CountRows {
    input: LogicalPlan,
    counter: RowCounter,
}

impl CountRows {
    /// `input` wrapped so that its rows are counted into `counter` when the plan runs.
    pub fn plan(input: LogicalPlan, counter: RowCounter) -> LogicalPlan {
        LogicalPlan::Extension(Extension {
            node: Arc::new(CountRows { input, counter }),
        })
    }
}

impl UserDefinedLogicalNodeCore for CountRows {
    fn name(&self) -> &str {
        "CountRows"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.input]
    }

    fn schema(&self) -> &DFSchemaRef {
        self.input.schema()
    }

    fn expressions(&self) -> Vec<Expr> {
        Vec::new()
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "CountRows")
    }

    fn with_exprs_and_inputs(&self, _exprs: Vec<Expr>, inputs: Vec<LogicalPlan>) -> Result<Self> {
        let input = inputs
            .into_iter()
            .next()
            .ok_or_else(|| DataFusionError::Internal("CountRows has one input".into()))?;
        Ok(CountRows {
            input,
            counter: self.counter.clone(),
        })
    }

    // The output is the input: the parent's columns are exactly the ones needed below.
    fn necessary_children_exprs(&self, output_columns: &[usize]) -> Option<Vec<Vec<usize>>> {
        Some(vec![output_columns.to_vec()])
    }
}

/// The physical pass-through node.
#[derive(Debug)]
pub struct CountRowsExec {
    input: Arc<dyn ExecutionPlan>,
    counter: RowCounter,
    properties: Arc<PlanProperties>,
}

impl CountRowsExec {
    fn new(input: Arc<dyn ExecutionPlan>, counter: RowCounter) -> Self {
        let properties = Arc::clone(input.properties());
        CountRowsExec {
            input,
            counter,
            properties,
        }
    }
}

impl DisplayAs for CountRowsExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "CountRowsExec")
    }
}

impl ExecutionPlan for CountRowsExec {
    fn name(&self) -> &str {
        "CountRowsExec"
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
            .ok_or_else(|| DataFusionError::Internal("CountRowsExec has one child".into()))?;
        Ok(Arc::new(CountRowsExec::new(input, self.counter.clone())))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let schema = input.schema();
        let counter = self.counter.clone();
        let counted = input.map(move |batch| {
            if let Ok(batch) = &batch {
                counter.add(batch.num_rows());
            }
            batch
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, counted)))
    }
}

/// Plans [`CountRows`] nodes as [`CountRowsExec`].
#[derive(Debug, Default)]
struct CountRowsPlanner;

#[async_trait]
impl ExtensionPlanner for CountRowsPlanner {
    async fn plan_extension(
        &self,
        _planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        _logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        _session: &dyn Session,
        _planning_ctx: &PhysicalPlanningContext,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(node) = node.as_any().downcast_ref::<CountRows>() else {
            return Ok(None);
        };
        let input = physical_inputs
            .first()
            .ok_or_else(|| DataFusionError::Internal("CountRows has one input".into()))?;
        Ok(Some(Arc::new(CountRowsExec::new(
            Arc::clone(input),
            node.counter.clone(),
        ))))
    }
}

/// The session's query planner: DataFusion's, plus [`CountRows`].
#[derive(Debug, Default)]
pub struct QuarryQueryPlanner;

#[async_trait]
impl QueryPlanner for QuarryQueryPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        DefaultPhysicalPlanner::with_extension_planners(vec![Arc::new(CountRowsPlanner)])
            .create_physical_plan(logical_plan, session)
            .await
    }
}
