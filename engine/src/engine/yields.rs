//! Yield points above the operators that can produce many batches from one input batch (joins,
//! unnest), so a cancelled query stops within a few batches.
//!
//! A query is cancelled by dropping its stream: DataFusion then aborts the tasks it spawned, but
//! an abort only takes effect when the task next yields to tokio. DataFusion's own
//! `EnsureCooperative` rule makes the scans yield, which is enough while every output batch
//! needs input; a cross join (or any join that multiplies rows) emits billions of rows from a
//! buffered side without touching its scan, and would run on after a timeout. Wrapping such an
//! operator in `CooperativeExec` spends tokio's task budget per batch it emits, so the task
//! yields every 128 batches and the abort lands. The cost is one budget check per batch.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coop::CooperativeExec;

/// Operators whose output is not bounded by their input's batches.
const MULTIPLYING: &[&str] = &[
    "CrossJoinExec",
    "NestedLoopJoinExec",
    "HashJoinExec",
    "SymmetricHashJoinExec",
    "SortMergeJoinExec",
    "PiecewiseMergeJoinExec",
    "UnnestExec",
];

/// The physical optimizer rule placing a [`CooperativeExec`] above every multiplying operator
/// (added after DataFusion's own rules).
#[derive(Debug, Default)]
pub struct YieldingJoins;

impl PhysicalOptimizerRule for YieldingJoins {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            if MULTIPLYING.contains(&node.name()) {
                let wrapped: Arc<dyn ExecutionPlan> = Arc::new(CooperativeExec::new(node));
                Ok(Transformed::yes(wrapped))
            } else {
                Ok(Transformed::no(node))
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "quarry_yielding_joins"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
