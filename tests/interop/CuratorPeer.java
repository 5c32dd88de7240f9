// CuratorPeer: a peer process running REAL Apache Curator 5.4 (Debian's
// libcurator-recipes-java) for zklock's interop tests. The C integration tests
// spawn it (through tests/interop/curator-peer) against the same ZooKeeper
// server as the C code, to prove that C and Java processes using the same lock
// paths exclude each other, see each other's nodes and revoke each other.
//
// Usage: CuratorPeer --zk HOSTS [--threads N] COMMAND ARGS...
//   mutex PATH ROUNDS LOG [HOLD_MS]             InterProcessMutex, kind M
//   read PATH ROUNDS LOG [HOLD_MS]              InterProcessReadWriteLock.readLock(), kind R
//   write PATH ROUNDS LOG [HOLD_MS]             InterProcessReadWriteLock.writeLock(), kind W
//   semaphore PATH LEASES ROUNDS LOG [HOLD_MS]  InterProcessSemaphoreV2, kind S
//   hold-revocable PATH [TIMEOUT_S]             print "HELD <node>", wait for revocation,
//                                               release, print "RELEASED"; exit 3 if not
//                                               revoked within TIMEOUT_S (default 60)
//   revoke NODEPATH                             Revoker.attemptRevoke, print "REVOKED"
//   hold PATH SECONDS                           print "HELD <node>", sleep, release, print "RELEASED"
//   participants PATH                           getParticipantNodes(), one per line
//   hold-until-lost PATH SESSION_MS             a session of SESSION_MS; print "HELD <node>",
//                                               then "SUSPENDED <ms>" and "LOST <ms>" (wall
//                                               clock) as Curator reports them; exit 0 at LOST
//                                               (the partition tests' Curator holder)
//   downgrade PATH LOG HOLD_MS                  write lock, then read lock, release write, hold read
//   latch-until-lost PATH SESSION_MS            hold-until-lost for a LeaderLatch (default error
//                                               policy): "HELD <node>" once leader, "STOP <ms>"
//                                               when its listener hears notLeader; exit 0 at LOST
//   latch PATH ROUNDS LOG [HOLD_MS]             LeaderLatch (id WHO), kind M: each round starts a
//                                               latch, awaits leadership, logs enter/exit with
//                                               its node's czxid as TOKEN, and closes it
//   selector PATH ROUNDS LOG [HOLD_MS]          LeaderSelector (id WHO, autoRequeue), kind M:
//                                               takeLeadership logs enter/exit (TOKEN 0), ROUNDS
//                                               terms per thread, then closes
//   latch-hold PATH ID SECONDS                  LeaderLatch with id ID: print "LEADING <node>"
//                                               once it leads, hold SECONDS, close, print "LEFT"
//   leader PATH                                 LeaderLatch.getLeader(): "LEADER <id>", or "NONE"
//   nemesis KIND PATH WHO LOG                   scripts/nemesis's Curator participant, KIND mutex
//                                               (InterProcessMutex) or latch (LeaderLatch): holds
//                                               again and again until SIGTERM, 20 to 300 ms each,
//                                               and logs as tests/nemesis/holder.c does (B, H, Z
//                                               lines, CLOCK_MONOTONIC in us, which is what
//                                               System.nanoTime reads on Linux). As Curator's docs
//                                               ask of a careful user, a hold's belief ends at
//                                               the first SUSPENDED or LOST after the grant (a
//                                               latch's, too, at hasLeadership() false).
//
// The first four and latch ("loop commands") run --threads N threads (default 1), each
// with its own CuratorFramework, i.e. its own ZooKeeper session. Options may
// appear anywhere on the command line.
//
// Event log: loop commands and downgrade append lines "KIND EVENT WHO TOKEN\n"
// (e.g. "M enter j-1234-0 0") to LOG, which is opened with O_APPEND; each line
// goes out in one write() call, so lines from concurrent C and Java writers
// never interleave. "enter" is written right after acquire returns and "exit"
// right before release is called.
//
// Every session: sessionTimeoutMs=10000, connectionTimeoutMs=10000,
// ExponentialBackoffRetry(100, 5), blockUntilConnected(10 s). Acquires time out
// after 60 s, which counts as an error. Exit 0 on success; otherwise a single
// line "curator-peer: COMMAND: message" on stderr and a non-zero exit status
// (1 error, 2 usage, 3 hold-revocable not revoked in time). On SIGTERM the JVM
// closes the sessions (their ephemeral nodes vanish at once); SIGKILL is a crash
// (the nodes stay until the 10 s session expires).
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;

public class CuratorPeer {
    static final int SESSION_TIMEOUT_MS = 10000, CONNECTION_TIMEOUT_MS = 10000;
    static final int CONNECT_WAIT_S = 10;
    static final long ACQUIRE_TIMEOUT_S = 60;
    static final String WHO_PREFIX = "j-" + ProcessHandle.current().pid() + "-";

    static String zk;
    static int threads = 1;
    static String command; // null until parsed
    /** Every client this process started; closed by the shutdown hook. */
    static final List<CuratorFramework> clients = new CopyOnWriteArrayList<>();

    /** A failure to report as the one stderr line, with its exit status. */
    static class Failure extends Exception {
        final int status;
        Failure(int status, String message) { super(message); this.status = status; }
    }

    /** InterProcessMutex that tells the calling thread's own lock node (protected getLockPath()). */
    static class OwnMutex extends InterProcessMutex {
        OwnMutex(CuratorFramework client, String path) { super(client, path); }
        String ownNode() { return getLockPath(); }
    }

    /** Body of one loop-command thread; index is the thread's index (part of WHO). */
    interface Worker {
        void run(CuratorFramework client, int index) throws Exception;
    }

    public static void main(String[] args) {
        try {
            run(parseOptions(args));
        } catch (Failure f) {
            fail(f.status, f.getMessage());
        } catch (Throwable t) {
            fail(1, describe(t));
        }
        closeAll();
        System.exit(0);
    }

    static void fail(int status, String message) {
        System.out.flush();
        System.err.println("curator-peer: " + (command == null ? "" : command + ": ") + message.replace('\n', ' '));
        System.err.flush();
        closeAll();
        System.exit(status);
    }

    static String describe(Throwable t) {
        String m = t.getMessage();
        return t.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }

    /** Takes --zk and --threads from anywhere in args; returns the rest (COMMAND ARGS...). */
    static List<String> parseOptions(String[] args) throws Failure {
        List<String> rest = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--zk" -> zk = optionValue(args, ++i, "--zk");
                case "--threads" -> {
                    threads = toInt(optionValue(args, ++i, "--threads"), "--threads");
                    if (threads < 1) throw new Failure(2, "--threads must be at least 1");
                }
                default -> rest.add(args[i]);
            }
        }
        if (!rest.isEmpty()) command = rest.get(0);
        if (zk == null) throw new Failure(2, "missing --zk HOSTS");
        if (rest.isEmpty()) throw new Failure(2, "missing COMMAND");
        return rest;
    }

    static String optionValue(String[] args, int i, String name) throws Failure {
        if (i >= args.length) throw new Failure(2, name + " needs a value");
        return args[i];
    }

    static void run(List<String> a) throws Exception {
        Runtime.getRuntime().addShutdownHook(new Thread(CuratorPeer::closeAll));
        switch (command) {
            case "mutex" -> { arity(a, 4, 5, "mutex PATH ROUNDS LOG [HOLD_MS]"); mutex(a.get(1), toInt(a.get(2), "ROUNDS"), a.get(3), holdMs(a, 4)); }
            case "read" -> { arity(a, 4, 5, "read PATH ROUNDS LOG [HOLD_MS]"); readWrite(a.get(1), false, toInt(a.get(2), "ROUNDS"), a.get(3), holdMs(a, 4)); }
            case "write" -> { arity(a, 4, 5, "write PATH ROUNDS LOG [HOLD_MS]"); readWrite(a.get(1), true, toInt(a.get(2), "ROUNDS"), a.get(3), holdMs(a, 4)); }
            case "semaphore" -> { arity(a, 5, 6, "semaphore PATH LEASES ROUNDS LOG [HOLD_MS]");
                semaphore(a.get(1), toInt(a.get(2), "LEASES"), toInt(a.get(3), "ROUNDS"), a.get(4), holdMs(a, 5)); }
            case "hold-revocable" -> { arity(a, 2, 3, "hold-revocable PATH [TIMEOUT_S]");
                holdRevocable(a.get(1), a.size() > 2 ? toDouble(a.get(2), "TIMEOUT_S") : 60); }
            case "revoke" -> { arity(a, 2, 2, "revoke NODEPATH"); revoke(a.get(1)); }
            case "hold" -> { arity(a, 3, 3, "hold PATH SECONDS"); hold(a.get(1), toDouble(a.get(2), "SECONDS")); }
            case "hold-until-lost" -> { arity(a, 3, 3, "hold-until-lost PATH SESSION_MS");
                holdUntilLost(a.get(1), toInt(a.get(2), "SESSION_MS")); }
            case "participants" -> { arity(a, 2, 2, "participants PATH"); participants(a.get(1)); }
            case "latch-until-lost" -> { arity(a, 3, 3, "latch-until-lost PATH SESSION_MS");
                latchUntilLost(a.get(1), toInt(a.get(2), "SESSION_MS")); }
            case "downgrade" -> { arity(a, 4, 4, "downgrade PATH LOG HOLD_MS"); downgrade(a.get(1), a.get(2), toInt(a.get(3), "HOLD_MS")); }
            case "latch" -> { arity(a, 4, 5, "latch PATH ROUNDS LOG [HOLD_MS]"); latch(a.get(1), toInt(a.get(2), "ROUNDS"), a.get(3), holdMs(a, 4)); }
            case "selector" -> { arity(a, 4, 5, "selector PATH ROUNDS LOG [HOLD_MS]"); selector(a.get(1), toInt(a.get(2), "ROUNDS"), a.get(3), holdMs(a, 4)); }
            case "latch-hold" -> { arity(a, 4, 4, "latch-hold PATH ID SECONDS"); latchHold(a.get(1), a.get(2), toDouble(a.get(3), "SECONDS")); }
            case "leader" -> { arity(a, 2, 2, "leader PATH"); leader(a.get(1)); }
            case "nemesis" -> { arity(a, 5, 5, "nemesis KIND PATH WHO LOG"); nemesis(a.get(1), a.get(2), a.get(3), a.get(4)); }
            default -> throw new Failure(2, "unknown command (mutex, read, write, semaphore, "
                    + "hold-revocable, revoke, hold, participants, downgrade, latch, latch-hold, leader, "
                    + "latch-until-lost, selector)");
        }
    }

    // ---- commands ----------------------------------------------------------

    static void mutex(String path, int rounds, String log, int holdMs) throws Exception {
        EventLog events = new EventLog(log);
        loop((client, index) -> {
            InterProcessMutex lock = new InterProcessMutex(client, path);
            lockRounds(lock, path, "M", rounds, events, index, holdMs);
        });
    }

    static volatile boolean nemesisStop;

    static long monoUs() { return System.nanoTime() / 1000; }

    static void nap(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** One line, in one write() of an O_APPEND file (as the C holder's). */
    static synchronized void say(FileOutputStream out, String line) {
        try {
            out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        } catch (IOException ignore) {
            // the log is the only output: nothing to tell
        }
    }

    static void nemesis(String kind, String path, String who, String log) throws Exception {
        if (!kind.equals("mutex") && !kind.equals("latch")) throw new Failure(2, "KIND is mutex or latch");
        FileOutputStream out = new FileOutputStream(log, true);
        Thread main = Thread.currentThread();
        // SIGTERM: the hold in hand ends (logged), then the session closes;
        // the client is not in clients, so the common hook cannot close it
        // under a hold that is still believed.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            nemesisStop = true;
            try { main.join(5000); } catch (InterruptedException ignore) { /* on the way out */ }
        }));
        Thread beats = new Thread(() -> {
            while (true) {
                say(out, "Z " + monoUs());
                nap(250);
            }
        });
        beats.setDaemon(true);
        beats.start();
        java.util.concurrent.atomic.AtomicLong suspendedUs = new java.util.concurrent.atomic.AtomicLong(0);
        CuratorFramework client = CuratorFrameworkFactory.newClient(zk, SESSION_TIMEOUT_MS, CONNECTION_TIMEOUT_MS,
                new ExponentialBackoffRetry(100, 5));
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (!state.isConnected()) suspendedUs.set(monoUs());
        });
        client.start();
        java.util.Random rng = new java.util.Random(ProcessHandle.current().pid());
        InterProcessMutex mutex = kind.equals("mutex") ? new InterProcessMutex(client, path) : null;
        while (!nemesisStop) {
            LeaderLatch latch = null;
            try {
                long asked = monoUs();
                if (mutex != null) {
                    if (!mutex.acquire(20, TimeUnit.SECONDS)) continue;
                } else {
                    latch = new LeaderLatch(client, path, who);
                    latch.start();
                    if (!latch.await(20, TimeUnit.SECONDS)) { latch.close(); continue; }
                }
                long t0 = monoUs(), t1 = t0, plan = t0 + 1000L * (20 + rng.nextInt(281));
                if (suspendedUs.get() >= asked) { /* told of a suspension on the way: not believed */
                    if (mutex != null) mutex.release(); else latch.close();
                    continue;
                }
                say(out, "B curator-" + kind + " " + who + " " + t0 + " 0");
                while ((t1 = monoUs()) < plan) {
                    long s = suspendedUs.get();
                    if (s >= t0) { t1 = s; break; }
                    if (latch != null && !latch.hasLeadership() || nemesisStop) break;
                    nap(5);
                }
                say(out, "H curator-" + kind + " " + who + " " + t0 + " " + t1 + " 0");
                if (mutex != null) mutex.release(); else latch.close();
            } catch (Exception e) {
                if (latch != null) try { latch.close(); } catch (Exception ignore) { /* its session is gone */ }
                nap(100);
            }
            nap(rng.nextInt(50));
        }
        client.close();
        say(out, "Z " + monoUs() + " end");
    }

    static void latch(String path, int rounds, String log, int holdMs) throws Exception {
        EventLog events = new EventLog(log);
        loop((client, index) -> {
            for (int r = 0; r < rounds; r++) {
                LeaderLatch latch = new LeaderLatch(client, path, WHO_PREFIX + index);
                latch.start();
                if (!latch.await(ACQUIRE_TIMEOUT_S, TimeUnit.SECONDS)) throw timedOut(path);
                long token = client.checkExists().forPath(latch.getOurPath()).getCzxid();
                events.write("M", "enter", index, token);
                sleepMs(holdMs);
                events.write("M", "exit", index, token);
                latch.close();
            }
        });
    }

    static void selector(String path, int rounds, String log, int holdMs) throws Exception {
        EventLog events = new EventLog(log);
        loop((client, index) -> {
            CountDownLatch done = new CountDownLatch(rounds);
            LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework c) throws Exception {
                    if (done.getCount() == 0) return; // requeued after the last term: let go
                    events.write("M", "enter", index);
                    sleepMs(holdMs);
                    events.write("M", "exit", index);
                    done.countDown();
                }
            });
            selector.setId(WHO_PREFIX + index);
            selector.autoRequeue();
            selector.start();
            if (!done.await(ACQUIRE_TIMEOUT_S, TimeUnit.SECONDS)) throw timedOut(path);
            selector.close();
        });
    }

    static void latchHold(String path, String id, double seconds) throws Exception {
        CuratorFramework client = connect();
        LeaderLatch latch = new LeaderLatch(client, path, id);
        latch.start();
        if (!latch.await(ACQUIRE_TIMEOUT_S, TimeUnit.SECONDS)) throw timedOut(path);
        System.out.println("LEADING " + latch.getOurPath());
        System.out.flush();
        sleepMs((long) (seconds * 1000));
        latch.close();
        System.out.println("LEFT");
        System.out.flush();
    }

    static void leader(String path) throws Exception {
        CuratorFramework client = connect();
        LeaderLatch latch = new LeaderLatch(client, path); // not started: only reads
        Participant p = latch.getLeader();
        System.out.println(p.isLeader() ? "LEADER " + p.getId() : "NONE");
        System.out.flush();
    }

    static void readWrite(String path, boolean write, int rounds, String log, int holdMs) throws Exception {
        EventLog events = new EventLog(log);
        loop((client, index) -> {
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path);
            lockRounds(write ? rw.writeLock() : rw.readLock(), path, write ? "W" : "R", rounds, events, index, holdMs);
        });
    }

    static void semaphore(String path, int leases, int rounds, String log, int holdMs) throws Exception {
        EventLog events = new EventLog(log);
        loop((client, index) -> {
            InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, leases);
            for (int r = 0; r < rounds; r++) {
                Lease lease = semaphore.acquire(ACQUIRE_TIMEOUT_S, TimeUnit.SECONDS);
                if (lease == null) throw timedOut(path);
                events.write("S", "enter", index);
                sleepMs(holdMs);
                events.write("S", "exit", index);
                semaphore.returnLease(lease);
            }
        });
    }

    static void holdRevocable(String path, double timeoutS) throws Exception {
        CuratorFramework client = connect();
        OwnMutex lock = new OwnMutex(client, path);
        CountDownLatch revoked = new CountDownLatch(1);
        // The listener runs on a ZooKeeper event thread; InterProcessMutex may only be
        // released by the thread that acquired it, so it just wakes this thread up.
        lock.makeRevocable(l -> revoked.countDown());
        acquire(lock, path);
        System.out.println("HELD " + lock.ownNode());
        System.out.flush();
        if (!revoked.await((long) (timeoutS * 1000), TimeUnit.MILLISECONDS))
            throw new Failure(3, "not revoked within " + seconds(timeoutS) + " s");
        lock.release();
        System.out.println("RELEASED");
        System.out.flush();
    }

    static void revoke(String nodePath) throws Exception {
        // Note: Curator ignores a node that does not exist (NoNodeException is swallowed).
        Revoker.attemptRevoke(connect(), nodePath);
        System.out.println("REVOKED");
        System.out.flush();
    }

    static void hold(String path, double seconds) throws Exception {
        OwnMutex lock = new OwnMutex(connect(), path);
        acquire(lock, path);
        System.out.println("HELD " + lock.ownNode());
        System.out.flush();
        sleepMs((long) (seconds * 1000));
        lock.release();
        System.out.println("RELEASED");
        System.out.flush();
    }

    /**
     * A connected client with a session of sessionMs that prints "SUSPENDED <ms>" (and, if
     * printLost, "LOST <ms>") as Curator reports them, and counts lost down at LOST.
     */
    static CuratorFramework reportingClient(int sessionMs, CountDownLatch lost, boolean printLost)
            throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(zk, sessionMs, CONNECTION_TIMEOUT_MS,
                new ExponentialBackoffRetry(100, 5));
        clients.add(client);
        client.getConnectionStateListenable().addListener((c, state) -> {
            switch (state) {
                case SUSPENDED -> { System.out.println("SUSPENDED " + System.currentTimeMillis()); System.out.flush(); }
                case LOST -> {
                    if (printLost) { System.out.println("LOST " + System.currentTimeMillis()); System.out.flush(); }
                    lost.countDown();
                }
                default -> { }
            }
        });
        client.start();
        if (!client.blockUntilConnected(CONNECT_WAIT_S, TimeUnit.SECONDS))
            throw new Failure(1, "could not connect to " + zk + " within " + CONNECT_WAIT_S + " s");
        return client;
    }

    static void holdUntilLost(String path, int sessionMs) throws Exception {
        CountDownLatch lost = new CountDownLatch(1);
        CuratorFramework client = reportingClient(sessionMs, lost, true);
        OwnMutex lock = new OwnMutex(client, path);
        acquire(lock, path);
        System.out.println("HELD " + lock.ownNode());
        System.out.flush();
        lost.await();
        System.exit(0);
    }

    static void latchUntilLost(String path, int sessionMs) throws Exception {
        CountDownLatch lost = new CountDownLatch(1);
        CuratorFramework client = reportingClient(sessionMs, lost, false);
        LeaderLatch latch = new LeaderLatch(client, path, WHO_PREFIX + "latch");
        latch.addListener(new org.apache.curator.framework.recipes.leader.LeaderLatchListener() {
            public void isLeader() { }
            public void notLeader() { System.out.println("STOP " + System.currentTimeMillis()); System.out.flush(); }
        });
        latch.start();
        if (!latch.await(ACQUIRE_TIMEOUT_S, TimeUnit.SECONDS)) throw timedOut(path);
        System.out.println("HELD " + latch.getOurPath());
        System.out.flush();
        lost.await();
        System.exit(0);
    }

    static void participants(String path) throws Exception {
        InterProcessMutex lock = new InterProcessMutex(connect(), path);
        StringBuilder out = new StringBuilder();
        try {
            for (String node : lock.getParticipantNodes()) out.append(node).append('\n');
        } catch (KeeperException.NoNodeException e) {
            // No lock directory yet: no participants (Curator itself throws here).
        }
        System.out.print(out);
        System.out.flush();
    }

    static void downgrade(String path, String log, int holdMs) throws Exception {
        EventLog events = new EventLog(log);
        InterProcessReadWriteLock rw = new InterProcessReadWriteLock(connect(), path);
        acquire(rw.writeLock(), path);
        events.write("W", "enter", 0);
        acquire(rw.readLock(), path);
        events.write("R", "enter", 0);
        events.write("W", "exit", 0);
        rw.writeLock().release();
        sleepMs(holdMs);
        events.write("R", "exit", 0);
        rw.readLock().release();
    }

    // ---- helpers -----------------------------------------------------------

    /** ROUNDS times: acquire, log enter, hold, log exit, release. */
    static void lockRounds(InterProcessLock lock, String path, String kind, int rounds, EventLog events, int index,
            int holdMs) throws Exception {
        for (int r = 0; r < rounds; r++) {
            acquire(lock, path);
            events.write(kind, "enter", index);
            sleepMs(holdMs);
            events.write(kind, "exit", index);
            lock.release();
        }
    }

    static void acquire(InterProcessLock lock, String what) throws Exception {
        if (!lock.acquire(ACQUIRE_TIMEOUT_S, TimeUnit.SECONDS)) throw timedOut(what);
    }

    static Failure timedOut(String what) {
        return new Failure(1, "acquire of " + what + " timed out after " + ACQUIRE_TIMEOUT_S + " s");
    }

    /** Runs worker on `threads` threads, each with its own session, all starting together. */
    static void loop(Worker worker) throws Exception {
        List<CuratorFramework> own = new ArrayList<>();
        for (int i = 0; i < threads; i++) own.add(connect());
        CountDownLatch start = new CountDownLatch(1);
        AtomicReference<Throwable> firstError = new AtomicReference<>();
        List<Thread> running = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            final int index = i;
            Thread t = new Thread(() -> {
                try {
                    start.await();
                    worker.run(own.get(index), index);
                } catch (Throwable e) {
                    firstError.compareAndSet(null, e);
                }
            }, "peer-" + i);
            t.start();
            running.add(t);
        }
        start.countDown();
        for (Thread t : running) t.join();
        Throwable e = firstError.get();
        if (e instanceof Exception) throw (Exception) e;
        if (e != null) throw new Failure(1, describe(e));
    }

    static CuratorFramework connect() throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(zk, SESSION_TIMEOUT_MS, CONNECTION_TIMEOUT_MS,
                new ExponentialBackoffRetry(100, 5));
        clients.add(client);
        client.start();
        if (!client.blockUntilConnected(CONNECT_WAIT_S, TimeUnit.SECONDS))
            throw new Failure(1, "could not connect to " + zk + " within " + CONNECT_WAIT_S + " s");
        return client;
    }

    static synchronized void closeAll() {
        for (CuratorFramework c : clients) {
            try {
                c.close();
            } catch (Throwable ignore) {
                // closing on the way out: nothing useful to report
            }
        }
        clients.clear();
    }

    /** Appends whole lines to the shared event log, one write() per line. */
    static class EventLog {
        private final FileOutputStream out;

        EventLog(String file) throws IOException {
            out = new FileOutputStream(file, true); // O_APPEND
        }

        synchronized void write(String kind, String event, int index) throws IOException {
            write(kind, event, index, 0);
        }

        synchronized void write(String kind, String event, int index, long token) throws IOException {
            out.write((kind + " " + event + " " + WHO_PREFIX + index + " " + token + "\n").getBytes(StandardCharsets.US_ASCII));
        }
    }

    /** 60.0 -> "60", 0.5 -> "0.5" */
    static String seconds(double s) {
        return s == Math.rint(s) ? String.valueOf((long) s) : String.valueOf(s);
    }

    static void sleepMs(long ms) throws InterruptedException {
        if (ms > 0) Thread.sleep(ms);
    }

    static int holdMs(List<String> a, int i) throws Failure {
        return a.size() > i ? toInt(a.get(i), "HOLD_MS") : 0;
    }

    static void arity(List<String> a, int min, int max, String usage) throws Failure {
        if (a.size() < min || a.size() > max) throw new Failure(2, "usage: " + usage);
    }

    static int toInt(String s, String name) throws Failure {
        try {
            int v = Integer.parseInt(s);
            if (v < 0) throw new NumberFormatException();
            return v;
        } catch (NumberFormatException e) {
            throw new Failure(2, name + " must be a non-negative integer, not '" + s + "'");
        }
    }

    static double toDouble(String s, String name) throws Failure {
        try {
            double v = Double.parseDouble(s);
            if (!(v >= 0)) throw new NumberFormatException();
            return v;
        } catch (NumberFormatException e) {
            throw new Failure(2, name + " must be a non-negative number, not '" + s + "'");
        }
    }
}
