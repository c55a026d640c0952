//! The archive's tables as plan sources, taken from the session's view so the lowering builds
//! plans synchronously.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::datasource::provider_as_source;
use datafusion::error::Result;
use datafusion::logical_expr::LogicalPlanBuilder;

/// Table providers by SQL name.
pub struct Tables {
    providers: HashMap<String, Arc<dyn TableProvider>>,
}

impl Tables {
    /// The tables of `providers` that are the catalog's (a reader scope's lack the tables it
    /// may not see).
    pub fn from_providers(
        providers: &std::collections::BTreeMap<String, Arc<dyn TableProvider>>,
    ) -> Self {
        Tables {
            providers: quarry_schema::CATALOG
                .iter()
                .filter_map(|def| {
                    providers
                        .get(def.name)
                        .map(|p| (def.name.to_string(), Arc::clone(p)))
                })
                .collect(),
        }
    }

    /// A plan scanning `table`.
    pub fn scan(&self, table: &str) -> Result<LogicalPlanBuilder> {
        let provider = self.providers.get(table).ok_or_else(|| {
            datafusion::error::DataFusionError::Plan(format!("the archive has no table {table}"))
        })?;
        LogicalPlanBuilder::scan(table, provider_as_source(Arc::clone(provider)), None)
    }
}
