/*
 * Runs Kafka's command-line tools one after another in one JVM, each as `bin/kafka-*.sh` would run it in
 * a JVM of its own (tests/support/kafka_tools.py; docs/testing.md, "Kafka's command-line tools").
 *
 * A JVM's start-up is most of a short tool's run time on two shared cores, so the tests keep one of these
 * per tool line and send it the tools to run: a JSON line on stdin {"main", "args", "stdin"} for each,
 * answered with a JSON line on stdout {"exit", "stdout", "stderr"}. What a tool would see of a JVM of its
 * own is kept for it:
 * - System.out, System.err and System.in are its own for the run (Scala's Console too: it holds the
 *   switching stream installed before any tool class loads);
 * - Kafka's Exit.exit ends the run with that status, and the first exit is the one that counts: as in a
 *   JVM that has stopped, nothing the tool prints after it (a handler that catches the unwinding) is kept;
 * - the shutdown hooks a tool adds through Kafka's Exit run when it ends, as the JVM's would at exit;
 * - an exception out of main prints as the JVM prints it, status 1.
 * Tools that call System.exit themselves or add hooks to the Runtime (the verifiable producer and
 * consumer) are run in JVMs of their own by the caller.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

public final class ToolLauncher {

    /** Where Kafka's Exit class is: 4.x moved it into an internals package. */
    private static final String[] EXIT_CLASSES = {
        "org.apache.kafka.common.utils.internals.Exit", "org.apache.kafka.common.utils.Exit",
    };

    /** Thrown by the exit procedure to unwind a tool's main. */
    static final class ToolExit extends Error {
        final int status;

        ToolExit(int status) {
            super("exit " + status, null, false, false);
            this.status = status;
        }
    }

    /** An output stream whose destination changes between runs. */
    static final class Switch extends OutputStream {
        volatile OutputStream target = OutputStream.nullOutputStream();

        @Override
        public void write(int b) throws IOException {
            target.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            target.write(b, off, len);
        }
    }

    /** An input stream whose source changes between runs. */
    static final class SwitchIn extends InputStream {
        volatile InputStream source = InputStream.nullInputStream();

        @Override
        public int read() throws IOException {
            return source.read();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            return source.read(b, off, len);
        }

        @Override
        public int available() throws IOException {
            return source.available();
        }
    }

    private static final Switch OUT = new Switch();
    private static final Switch ERR = new Switch();
    private static final SwitchIn IN = new SwitchIn();
    private static final List<Runnable> HOOKS = new ArrayList<>();
    private static volatile Integer exited;

    public static void main(String[] args) throws Exception {
        Charset charset = Charset.defaultCharset();
        PrintStream answers = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        BufferedReader requests = new BufferedReader(
            new InputStreamReader(new FileInputStream(FileDescriptor.in), StandardCharsets.UTF_8));
        System.setOut(new PrintStream(OUT, true, charset));
        System.setErr(new PrintStream(ERR, true, charset));
        System.setIn(IN);
        installExit();
        ObjectMapper mapper = new ObjectMapper();
        answers.println("{\"ready\": true}");
        String line;
        while ((line = requests.readLine()) != null) {
            JsonNode request = mapper.readTree(line);
            List<String> toolArgs = new ArrayList<>();
            request.get("args").forEach(arg -> toolArgs.add(arg.asText()));
            ByteArrayOutputStream stdout = new ByteArrayOutputStream();
            ByteArrayOutputStream stderr = new ByteArrayOutputStream();
            int status = run(request.get("main").asText(), toolArgs.toArray(new String[0]),
                request.get("stdin").asText().getBytes(charset), stdout, stderr);
            ObjectNode answer = mapper.createObjectNode();
            answer.put("exit", status);
            answer.put("stdout", stdout.toString(charset));
            answer.put("stderr", stderr.toString(charset));
            answers.println(mapper.writeValueAsString(answer));
        }
        System.exit(0);
    }

    private static int run(String main, String[] args, byte[] stdin, OutputStream stdout, OutputStream stderr) {
        synchronized (HOOKS) {
            HOOKS.clear();
        }
        exited = null;
        IN.source = new ByteArrayInputStream(stdin);
        OUT.target = stdout;
        ERR.target = stderr;
        int status = 0;
        try {
            Method entry = Class.forName(main).getMethod("main", String[].class);
            entry.invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (!(cause instanceof ToolExit) && exited == null) {
                System.err.print("Exception in thread \"main\" ");
                cause.printStackTrace();
                status = 1;
            }
        } catch (ReflectiveOperationException e) {
            e.printStackTrace();
            status = 1;
        }
        if (exited != null) {
            status = exited;
        }
        // the JVM would now run the hooks and stop: they print what they print
        OUT.target = stdout;
        ERR.target = stderr;
        List<Runnable> hooks;
        synchronized (HOOKS) {
            hooks = new ArrayList<>(HOOKS);
        }
        for (Runnable hook : hooks) {
            try {
                hook.run();
            } catch (ToolExit ignored) {
                // a hook that exits: the JVM is stopping anyway
            } catch (Throwable t) {
                t.printStackTrace();
            }
        }
        System.out.flush();
        System.err.flush();
        OUT.target = OutputStream.nullOutputStream();
        ERR.target = OutputStream.nullOutputStream();
        IN.source = InputStream.nullInputStream();
        return status;
    }

    private static Object objectMethod(Object proxy, Method method, Object[] args) {
        switch (method.getName()) {
            case "equals":
                return proxy == args[0];
            case "hashCode":
                return System.identityHashCode(proxy);
            default:
                return "ToolLauncher's " + proxy.getClass().getInterfaces()[0].getSimpleName();
        }
    }

    /** Kafka's Exit (whichever package this line has it in) ends a run instead of the JVM. */
    private static void installExit() throws ReflectiveOperationException {
        Class<?> exit = null;
        for (String name : EXIT_CLASSES) {
            try {
                exit = Class.forName(name);
                break;
            } catch (ClassNotFoundException ignored) {
                // the other line's
            }
        }
        if (exit == null) {
            throw new ClassNotFoundException("Kafka's Exit class, in neither of " + String.join(", ", EXIT_CLASSES));
        }
        Class<?> procedure = Class.forName(exit.getName() + "$Procedure");
        Object stop = Proxy.newProxyInstance(procedure.getClassLoader(), new Class<?>[] {procedure},
            (proxy, method, methodArgs) -> {
                if (method.getDeclaringClass() == Object.class) {
                    return objectMethod(proxy, method, methodArgs);
                }
                int status = (Integer) methodArgs[0];
                synchronized (ToolLauncher.class) {
                    if (exited == null) {
                        exited = status;
                        // a stopped JVM prints nothing more
                        OUT.target = OutputStream.nullOutputStream();
                        ERR.target = OutputStream.nullOutputStream();
                    }
                }
                throw new ToolExit(status);
            });
        exit.getMethod("setExitProcedure", procedure).invoke(null, stop);
        exit.getMethod("setHaltProcedure", procedure).invoke(null, stop);
        Class<?> adder = Class.forName(exit.getName() + "$ShutdownHookAdder");
        Object collect = Proxy.newProxyInstance(adder.getClassLoader(), new Class<?>[] {adder},
            (proxy, method, methodArgs) -> {
                if (method.getDeclaringClass() == Object.class) {
                    return objectMethod(proxy, method, methodArgs);
                }
                synchronized (HOOKS) {
                    HOOKS.add((Runnable) methodArgs[1]);
                }
                return null;
            });
        exit.getMethod("setShutdownHookAdder", adder).invoke(null, collect);
    }
}
