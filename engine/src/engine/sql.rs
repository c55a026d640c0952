//! Read-only SQL: the statement is parsed (DataFusion's parser, the generic dialect) and checked
//! by its type, not its prefix, before anything is planned. Exactly one statement, and it must
//! be a query: no DDL or DML (a `WITH` wrapping a write included), no `SELECT ... INTO`,
//! `SHOW`, `COPY`, `SET`, `PRAGMA`/`ATTACH`, transaction control or `CREATE FUNCTION`; no
//! table functions and no quoted paths or URLs as tables (ad hoc external tables are off for
//! every scope); no `EXPLAIN ANALYZE` (it runs the query); plain `EXPLAIN` only for admin.
//!
//! The walk over the statement is sqlparser's visitor, so a subquery, a CTE, a union branch or
//! an `IN (SELECT ...)` is checked like the top level. What is refused is named by
//! [`Refusal`]. The plan is then checked once more by DataFusion's own `SQLOptions` (no DDL,
//! DML or statements), a second lock on the same door.

use std::ops::ControlFlow;

use datafusion::sql::parser::{DFParser, Statement as DfStatement};
use datafusion::sql::sqlparser::ast::{
    ObjectName, ObjectNamePart, Query, Select, SetExpr, Statement, TableFactor, Visit, Visitor,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

use crate::error::{Error, Refusal};

/// The most set operations one statement may chain.
const MAX_SET_OPERATIONS: usize = 200;

/// `sql` checked: the one statement, ready to plan, when it is a query this scope may run.
pub fn check(sql: &str, admin: bool) -> Result<DfStatement, Error> {
    let dialect = GenericDialect {};
    let tokens = Tokenizer::new(&dialect, sql).tokenize().map_err(|e| {
        refused(
            Refusal::Syntax,
            format!("the statement does not parse: {e}"),
        )
    })?;
    if tokens
        .iter()
        .all(|t| matches!(t, Token::Whitespace(_) | Token::SemiColon | Token::EOF))
    {
        return Err(refused(
            Refusal::Empty,
            "the statement is empty (only whitespace, comments or semicolons)",
        ));
    }
    // The statement's walk (and DataFusion's planner) recurse once per set operation: a chain
    // of thousands would exhaust the stack, so it is refused first.
    let set_operations = tokens
        .iter()
        .filter(|t| {
            matches!(t, Token::Word(w) if matches!(w.keyword, Keyword::UNION | Keyword::INTERSECT | Keyword::EXCEPT))
        })
        .count();
    if set_operations > MAX_SET_OPERATIONS {
        return Err(refused(
            Refusal::TooLarge,
            format!(
                "{set_operations} UNION / INTERSECT / EXCEPT operations; at most {MAX_SET_OPERATIONS} in one statement"
            ),
        ));
    }
    let mut statements = DFParser::parse_sql_with_dialect(sql, &dialect).map_err(|e| {
        refused(
            Refusal::Syntax,
            format!("the statement does not parse: {e}"),
        )
    })?;
    if statements.len() > 1 {
        return Err(refused(
            Refusal::MultipleStatements,
            format!(
                "{} statements: give exactly one query (a batch is never run)",
                statements.len()
            ),
        ));
    }
    let statement = statements
        .pop_front()
        .ok_or_else(|| refused(Refusal::Empty, "the statement is empty"))?;
    check_statement(&statement, admin)?;
    Ok(statement)
}

fn refused(refusal: Refusal, message: impl Into<String>) -> Error {
    Error::SqlRefused {
        refusal,
        message: message.into(),
    }
}

fn check_statement(statement: &DfStatement, admin: bool) -> Result<(), Error> {
    match statement {
        DfStatement::Statement(s) => check_sql_statement(s),
        DfStatement::CreateExternalTable(_) => Err(refused(
            Refusal::Ddl,
            "CREATE EXTERNAL TABLE is data definition, and ad hoc external tables are off",
        )),
        DfStatement::CopyTo(_) => Err(refused(Refusal::Copy, "COPY writes files")),
        DfStatement::Reset(_) => Err(refused(Refusal::Set, "RESET changes a setting")),
        DfStatement::Explain(explain) => {
            if explain.options.analyze {
                return Err(refused(
                    Refusal::ExplainAnalyze,
                    "EXPLAIN ANALYZE runs the query; it is refused in every scope (plain EXPLAIN shows the plan)",
                ));
            }
            match explain.statement.as_ref() {
                DfStatement::Explain(_) => {
                    return Err(refused(Refusal::NestedExplain, "EXPLAIN of an EXPLAIN"));
                }
                DfStatement::Statement(inner)
                    if matches!(inner.as_ref(), Statement::Explain { .. }) =>
                {
                    return Err(refused(Refusal::NestedExplain, "EXPLAIN of an EXPLAIN"));
                }
                DfStatement::Statement(inner) if matches!(inner.as_ref(), Statement::Query(_)) => {
                    check_sql_statement(inner)?;
                }
                other => {
                    return Err(refused(
                        Refusal::ExplainOfNonQuery,
                        format!(
                            "EXPLAIN of a statement that is not a query ({})",
                            kind_of(other).1
                        ),
                    ));
                }
            }
            if !admin {
                return Err(refused(
                    Refusal::ExplainAdminOnly,
                    "EXPLAIN is only for the admin scope",
                ));
            }
            Ok(())
        }
    }
}

/// The refusal and a name for a statement that is not a query.
fn kind_of(statement: &DfStatement) -> (Refusal, String) {
    match statement {
        DfStatement::Statement(s) => classify(s),
        DfStatement::CreateExternalTable(_) => (Refusal::Ddl, "CREATE EXTERNAL TABLE".into()),
        DfStatement::CopyTo(_) => (Refusal::Copy, "COPY".into()),
        DfStatement::Reset(_) => (Refusal::Set, "RESET".into()),
        DfStatement::Explain(_) => (Refusal::NestedExplain, "EXPLAIN".into()),
    }
}

/// What kind of statement `s` is, when it is not a query. Classified by the statement's variant
/// name, so a kind a newer sqlparser adds still falls into `not_a_query` (refused), never
/// through.
fn classify(s: &Statement) -> (Refusal, String) {
    let debug = format!("{s:?}");
    let variant: String = debug
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let v = variant.as_str();
    let refusal = if v.starts_with("Show") {
        Refusal::Show
    } else if v.contains("Function") || v.contains("Macro") || v.contains("Procedure") {
        Refusal::Function
    } else if v.starts_with("Insert")
        || v.starts_with("Update")
        || v.starts_with("Delete")
        || v.starts_with("Merge")
        || v.starts_with("Replace")
    {
        Refusal::Dml
    } else if v.starts_with("Create")
        || v.starts_with("Alter")
        || v.starts_with("Drop")
        || v.starts_with("Truncate")
        || v.starts_with("Rename")
        || v.starts_with("Comment")
        || v == "Msck"
        || v == "Undrop"
    {
        Refusal::Ddl
    } else if v.starts_with("Copy") || v == "Unload" {
        Refusal::Copy
    } else if v.starts_with("Set") || v.starts_with("Reset") {
        Refusal::Set
    } else if v == "Pragma" || v.starts_with("Attach") || v.starts_with("Detach") {
        Refusal::PragmaAttach
    } else if v.starts_with("StartTransaction")
        || v == "Commit"
        || v == "Rollback"
        || v == "Savepoint"
        || v == "ReleaseSavepoint"
    {
        Refusal::Transaction
    } else if v == "Explain" {
        Refusal::ExplainOfNonQuery
    } else {
        Refusal::NotAQuery
    };
    (refusal, v.to_string())
}

fn check_sql_statement(s: &Statement) -> Result<(), Error> {
    match s {
        Statement::Query(query) => check_query(query),
        Statement::Explain { analyze: true, .. } => Err(refused(
            Refusal::ExplainAnalyze,
            "EXPLAIN ANALYZE runs the query; it is refused in every scope",
        )),
        other => {
            let (refusal, name) = classify(other);
            Err(refused(refusal, describe(refusal, &name)))
        }
    }
}

/// The message of a refused statement kind.
fn describe(refusal: Refusal, variant: &str) -> String {
    let what = match refusal {
        Refusal::Ddl => "data definition",
        Refusal::Dml => "data modification",
        Refusal::Copy => "COPY (it reads or writes files)",
        Refusal::Show => {
            "SHOW (query information_schema.tables or information_schema.columns instead)"
        }
        Refusal::Set => "a setting change",
        Refusal::PragmaAttach => "PRAGMA, ATTACH or DETACH",
        Refusal::Transaction => "transaction control",
        Refusal::Function => "creating or dropping a function",
        _ if variant == "ExplainTable" => "DESCRIBE (query information_schema.columns instead)",
        _ => "not a query",
    };
    format!(
        "{variant} is {what}; only one read-only query (SELECT, WITH ... SELECT, VALUES) is run"
    )
}

/// Checks every part of a query: nested statements (a `WITH` wrapping a write), `SELECT ...
/// INTO`, and every table reference.
fn check_query(query: &Query) -> Result<(), Error> {
    let mut checker = QueryChecker;
    match query.visit(&mut checker) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(e) => Err(*e),
    }
}

struct QueryChecker;

impl Visitor for QueryChecker {
    type Break = Box<Error>;

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<Self::Break> {
        match query.body.as_ref() {
            SetExpr::Insert(s) | SetExpr::Update(s) | SetExpr::Delete(s) | SetExpr::Merge(s) => {
                let (refusal, name) = classify(s);
                ControlFlow::Break(Box::new(refused(
                    refusal,
                    format!("{} (inside a query)", describe(refusal, &name)),
                )))
            }
            _ => ControlFlow::Continue(()),
        }
    }

    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<Self::Break> {
        match statement {
            Statement::Query(_) => ControlFlow::Continue(()),
            other => {
                let (refusal, name) = classify(other);
                ControlFlow::Break(Box::new(refused(
                    refusal,
                    format!("{} (inside a query)", describe(refusal, &name)),
                )))
            }
        }
    }

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<Self::Break> {
        if select.into.is_some() {
            return ControlFlow::Break(Box::new(refused(
                Refusal::SelectInto,
                "SELECT ... INTO creates a table; run the SELECT alone",
            )));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<Self::Break> {
        let external = |what: String| {
            ControlFlow::Break(Box::new(refused(
                Refusal::ExternalRead,
                format!(
                    "{what}: table functions and file or URL tables are off (ad hoc external tables are not available in any scope); query the catalog's tables"
                ),
            )))
        };
        match factor {
            TableFactor::Table {
                name,
                args: Some(_),
                ..
            } => external(format!("`{name}(...)` is a table function")),
            TableFactor::Table { name, .. } if names_a_file(name) => {
                external(format!("`{name}` names a file or URL"))
            }
            TableFactor::TableFunction { expr, .. } => {
                external(format!("TABLE({expr}) is a table function"))
            }
            TableFactor::Function { name, .. } => {
                external(format!("`{name}(...)` is a table function"))
            }
            _ => ControlFlow::Continue(()),
        }
    }
}

/// Whether a table name is a file path or URL rather than a catalog name: a part written in
/// single quotes, or holding `/`, `\`, `:`, `.` or `~` (no catalog name does).
fn names_a_file(name: &ObjectName) -> bool {
    name.0.iter().any(|part| match part {
        ObjectNamePart::Identifier(ident) => {
            ident.quote_style == Some('\'') || ident.value.contains(['/', '\\', ':', '.', '~'])
        }
        ObjectNamePart::Function(_) => true,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn refusal(sql: &str, admin: bool) -> Option<Refusal> {
        match check(sql, admin) {
            Ok(_) => None,
            Err(Error::SqlRefused { refusal, .. }) => Some(refusal),
            Err(other) => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn queries_pass() {
        for sql in [
            "SELECT 1",
            "select * from sessions where repo = 'x' limit 5;",
            "WITH a AS (SELECT session_id FROM sessions) SELECT * FROM a JOIN messages USING (session_id)",
            "SELECT * FROM sessions UNION ALL SELECT * FROM sessions",
            "VALUES (1), (2)",
            "SELECT \"session_id\" FROM \"sessions\"",
        ] {
            assert_eq!(refusal(sql, false), None, "{sql}");
        }
        assert_eq!(refusal("EXPLAIN SELECT 1", true), None);
    }

    #[test]
    fn each_kind_is_named() {
        for (sql, expected) in [
            ("", Refusal::Empty),
            ("  -- nothing\n /* at all */ ;", Refusal::Empty),
            ("SELECT 1; SELECT 2", Refusal::MultipleStatements),
            ("DROP TABLE sessions", Refusal::Ddl),
            ("CREATE TABLE t AS SELECT 1", Refusal::Ddl),
            ("INSERT INTO sessions VALUES (1)", Refusal::Dml),
            ("WITH x AS (SELECT 1) DELETE FROM sessions", Refusal::Dml),
            ("SELECT * INTO t FROM sessions", Refusal::SelectInto),
            ("SHOW TABLES", Refusal::Show),
            ("COPY sessions TO '/tmp/x.csv'", Refusal::Copy),
            ("SET datafusion.execution.batch_size = 1", Refusal::Set),
            ("BEGIN", Refusal::Transaction),
            (
                "CREATE FUNCTION f() RETURNS INT RETURN 1",
                Refusal::Function,
            ),
            (
                "SELECT * FROM read_parquet('/etc/passwd')",
                Refusal::ExternalRead,
            ),
            ("SELECT * FROM 'x.parquet'", Refusal::ExternalRead),
            (
                "SELECT * FROM sessions WHERE session_id IN (SELECT * FROM read_csv('x'))",
                Refusal::ExternalRead,
            ),
            ("EXPLAIN ANALYZE SELECT 1", Refusal::ExplainAnalyze),
            ("EXPLAIN EXPLAIN SELECT 1", Refusal::NestedExplain),
            ("EXPLAIN DELETE FROM sessions", Refusal::ExplainOfNonQuery),
            ("SELECT 'abc", Refusal::Syntax),
        ] {
            assert_eq!(refusal(sql, true), Some(expected), "{sql}");
        }
        assert_eq!(
            refusal("EXPLAIN SELECT 1", false),
            Some(Refusal::ExplainAdminOnly)
        );
        let chain = |n: usize| vec!["SELECT 1"; n].join(" UNION ALL ");
        assert_eq!(refusal(&chain(201), true), None);
        assert_eq!(refusal(&chain(202), true), Some(Refusal::TooLarge));
    }
}
