package odradek.compat.support;

import java.time.Duration;

/** Waiting for a condition that other processes make true, with a bound and a message naming it. */
public final class Waits {
    private Waits() {
    }

    @FunctionalInterface
    public interface Condition {
        boolean holds() throws Exception;
    }

    /** Returns as soon as {@code condition} holds; throws AssertionError naming {@code what} after {@code bound}. */
    public static void until(Duration bound, String what, Condition condition) throws InterruptedException {
        long deadline = System.nanoTime() + bound.toNanos();
        Exception last = null;
        while (true) {
            try {
                if (condition.holds()) {
                    return;
                }
            } catch (InterruptedException interrupted) {
                throw interrupted;
            } catch (Exception failure) {
                last = failure;
            }
            if (System.nanoTime() > deadline) {
                AssertionError error = new AssertionError("waited " + bound.toSeconds() + " s for " + what);
                if (last != null) {
                    error.initCause(last);
                }
                throw error;
            }
            Thread.sleep(50);
        }
    }
}
