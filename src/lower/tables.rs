//! The archive's tables as plan sources, fetched once per query so the lowering builds plans
//! synchronously.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::datasource::provider_as_source;
use datafusion::error::Result;
use datafusion::logical_expr::LogicalPlanBuilder;
use datafusion::prelude::SessionContext;

/// Table providers by SQL name.
pub struct Tables {
    providers: HashMap<String, Arc<dyn TableProvider>>,
}

impl Tables {
    /// Every table of the catalog registered in `ctx` (a reader scope's catalog lacks the
    /// tables it may not see; a query naming one fails as naming no table).
    pub async fn load(ctx: &SessionContext) -> Result<Self> {
        let mut providers = HashMap::new();
        for def in quarry_schema::CATALOG {
            if ctx.table_exist(def.name)? {
                providers.insert(def.name.to_string(), ctx.table_provider(def.name).await?);
            }
        }
        Ok(Tables { providers })
    }

    /// A plan scanning `table`.
    pub fn scan(&self, table: &str) -> Result<LogicalPlanBuilder> {
        let provider = self.providers.get(table).ok_or_else(|| {
            datafusion::error::DataFusionError::Plan(format!("the archive has no table {table}"))
        })?;
        LogicalPlanBuilder::scan(table, provider_as_source(Arc::clone(provider)), None)
    }
}
