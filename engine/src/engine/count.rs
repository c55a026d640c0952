//! Counting an aggregate's input as it flows: a pass-through plan node placed between an
//! aggregate and its input (above any re-applied `Inexact` filter), so `input_rows` costs no
//! second scan. The logical node ([`CountRows`]) keeps projection pushdown working (it needs
//! exactly the columns its parent needs); the physical node (a [`PassThroughExec`] named `CountRowsExec`) adds
//! every partition's rows to one shared [`RowCounter`] and changes nothing else.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::{DFSchemaRef, DataFusionError, Result};
use datafusion::execution::context::QueryPlanner;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{
    Expr, Extension, LogicalPlan, UserDefinedLogicalNode, UserDefinedLogicalNodeCore,
};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};
use quarry_providers::pass_through::PassThroughExec;

use crate::answer::RowCounter;

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

/// Plans [`CountRows`] nodes as a [`PassThroughExec`] named `CountRowsExec` that adds every
/// batch's rows to the counter.
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
        let counter = node.counter.clone();
        Ok(Some(Arc::new(PassThroughExec::new(
            "CountRowsExec",
            Arc::clone(input),
            Some(Arc::new(move |rows| counter.add(rows))),
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
