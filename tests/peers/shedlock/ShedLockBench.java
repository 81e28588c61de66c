// ShedLock's lock + unlock of one name, timed block by block for bench_sql, which runs baton's
// lock + release in the blocks between, so that both meet the same server in the same minutes.
//
//   java -cp CLASSPATH ShedLockBench URL TABLE TRANSPORT
//
// URL is the store's (postgres://user:password@host:port/db or mysql://... / mariadb://...,
// percent-encoded as baton takes it); TABLE, the ShedLock table this run creates and drops;
// TRANSPORT, `tls` or `plain`: the one baton's driver uses on that server, so that both pay
// the same for it (TLS unverified here: the comparison is of cost, on loopback).
// ShedLock is used as its users deploy it: JdbcLockProvider (shedlock-provider-jdbc, plain
// JDBC, the database's durable commits) over a HikariCP pool, a lock of 60 s held for no
// minimum time, released at once. After a warm-up (the first lock inserts the row, later ones
// update it; the JIT compiles the loop), it answers on standard output, one line per command
// read on standard input:
//
//   run N   ->  "ok T1 T2 ... TN": N lock + unlock, each one's wall time in nanoseconds
//   quit    ->  "bye", after dropping the table
//
// Any failure is one line "error: ..." and exit status 1.

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.jdbc.JdbcLockProvider;

public final class ShedLockBench {
    private static final int WARM_UP = 500;

    public static void main(String[] args) {
        try {
            if (args.length != 3 || !args[1].matches("[a-z_][a-z0-9_]*") || !args[2].matches("tls|plain")) {
                throw new IllegalArgumentException("usage: ShedLockBench URL TABLE tls|plain (TABLE: [a-z_][a-z0-9_]*)");
            }
            run(args[0], args[1], args[2].equals("tls"));
        } catch (Exception e) {
            System.out.println("error: " + e);
            System.out.flush();
            System.exit(1);
        }
    }

    private static void run(String url, String table, boolean tls) throws Exception {
        URI uri = URI.create(url);
        String scheme = uri.getScheme();
        String jdbc;
        String create;
        String transport;
        switch (scheme == null ? "" : scheme) {
            case "postgres":
            case "postgresql":
                jdbc = "jdbc:postgresql://";
                transport = tls ? "?sslmode=require&sslfactory=org.postgresql.ssl.NonValidatingFactory" : "?sslmode=disable";
                // ShedLock's documented PostgreSQL table.
                create = "CREATE TABLE " + table + " (name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL,"
                        + " locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))";
                break;
            case "mysql":
            case "mariadb":
                jdbc = "jdbc:mariadb://";
                transport = tls ? "?sslMode=trust" : "?sslMode=disable";
                // ShedLock's documented MySQL / MariaDB table.
                create = "CREATE TABLE " + table + " (name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(3) NOT NULL,"
                        + " locked_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),"
                        + " locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))";
                break;
            default:
                throw new IllegalArgumentException("ShedLock's JDBC provider is measured on PostgreSQL and MariaDB, not on " + scheme + ": URLs");
        }
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbc + uri.getHost() + (uri.getPort() > 0 ? ":" + uri.getPort() : "") + uri.getRawPath() + transport);
        String userInfo = uri.getRawUserInfo();
        if (userInfo != null) {
            String[] parts = userInfo.split(":", 2);
            config.setUsername(URLDecoder.decode(parts[0], StandardCharsets.UTF_8));
            if (parts.length == 2) {
                config.setPassword(URLDecoder.decode(parts[1], StandardCharsets.UTF_8));
            }
        }
        config.setMaximumPoolSize(2);
        try (HikariDataSource pool = new HikariDataSource(config)) {
            try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
                s.execute(create);
            }
            try {
                serve(new JdbcLockProvider(pool, table));
            } finally {
                try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
                    s.execute("DROP TABLE IF EXISTS " + table);
                }
            }
        }
        System.out.println("bye");
        System.out.flush();
    }

    private static void serve(JdbcLockProvider provider) throws Exception {
        for (int i = 0; i < WARM_UP; i++) {
            lockAndUnlock(provider);
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.equals("quit")) {
                return;
            }
            if (!line.startsWith("run ")) {
                throw new IllegalArgumentException("unknown command " + line);
            }
            int n = Integer.parseInt(line.substring(4).trim());
            long[] took = new long[n];
            for (int i = 0; i < n; i++) {
                long started = System.nanoTime();
                lockAndUnlock(provider);
                took[i] = System.nanoTime() - started;
            }
            StringBuilder out = new StringBuilder("ok");
            for (long t : took) {
                out.append(' ').append(t);
            }
            System.out.println(out);
            System.out.flush();
        }
    }

    private static void lockAndUnlock(JdbcLockProvider provider) {
        // ShedLock's own clock (milliseconds), as its task executors use: with Instant.now() the
        // unlock time (the later of now and the creation time) can fall after the next lock's
        // millisecond, and that lock is refused.
        LockConfiguration config = new LockConfiguration(ClockProvider.now(), "bench", Duration.ofSeconds(60), Duration.ZERO);
        Optional<SimpleLock> lock = provider.lock(config);
        if (lock.isEmpty()) {
            throw new IllegalStateException("ShedLock did not grant an uncontended lock");
        }
        lock.get().unlock();
    }
}
