//! The store conformance suite (see `baton_tests::conformance`) on every store the environment
//! names: memory always, SQLite always (a temporary file unless `BATON_SQLITE_URL` is set),
//! PostgreSQL with `BATON_POSTGRES_URL`, MariaDB/MySQL with `BATON_MYSQL_URL`. Unset stores are
//! skipped with a line on stderr, or fail under `BATON_REQUIRE_SERVICES=1`.
//!
//! ```text
//! scripts/postgres start; scripts/mariadb start
//! BATON_POSTGRES_URL=$(scripts/postgres url) BATON_MYSQL_URL=$(scripts/mariadb url) \
//!   BATON_REQUIRE_SERVICES=1 cargo test -p baton-tests --test conformance
//! ```

mod memory {
    baton_tests::conformance_tests!(baton_tests::conformance::Backend::Memory);
}

mod sqlite {
    baton_tests::conformance_tests!(baton_tests::conformance::Backend::Sqlite);
}

mod postgres {
    baton_tests::conformance_tests!(baton_tests::conformance::Backend::Postgres);
}

mod mysql {
    baton_tests::conformance_tests!(baton_tests::conformance::Backend::Mysql);
}
