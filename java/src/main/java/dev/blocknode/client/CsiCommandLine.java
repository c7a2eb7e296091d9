package dev.blocknode.client;

import com.google.protobuf.Message;
import com.google.protobuf.TextFormat;
import dev.blocknode.config.FlagParser;
import dev.blocknode.csi.client.UnixSocketChannels;
import dev.blocknode.csi.v1.ControllerGrpc;
import dev.blocknode.csi.v1.IdentityGrpc;
import dev.blocknode.csi.v1.NodeGrpc;
import dev.blocknode.logging.Printable;
import dev.blocknode.os.SmallFiles;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.stub.ClientCalls;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * {@code blocknode client}: calls any Identity, Node or Controller RPC on a socket, like the csc tool.
 * The request is given in protobuf text format (the CSI field names), inline or from a file with
 * {@code @file}; the answer is printed the same way. The exit code is the gRPC status code (0 for OK),
 * so scripts can tell NOT_FOUND (5) from ABORTED (10).
 *
 * <pre>
 * blocknode client --endpoint unix:///csi/csi.sock Probe
 * blocknode client --endpoint unix:///csi/csi.sock NodeGetVolumeStats 'volume_id: "pv-1" volume_path: "/var/lib/kubelet/pods/..."'
 * </pre>
 */
public final class CsiCommandLine {

    /** Far above any request's text form. */
    static final int MAX_INPUT_BYTES = 16 << 20;

    public static final String USAGE = """
            usage: java -jar blocknode.jar client [--endpoint unix:///path] [--timeout 2m] RPC [REQUEST | @FILE]
              RPC       an Identity, Node or Controller method, e.g. Probe, NodeGetInfo, NodeStageVolume
              REQUEST   the request in protobuf text format, e.g. 'volume_id: "pv-1"' (default: empty)
              exit code the gRPC status code: 0 OK, 3 INVALID_ARGUMENT, 5 NOT_FOUND, 9 FAILED_PRECONDITION, ...
            methods: %s
            """;

    private static final List<ServiceDescriptor> SERVICES = List.of(IdentityGrpc.getServiceDescriptor(),
            NodeGrpc.getServiceDescriptor(), ControllerGrpc.getServiceDescriptor());

    private CsiCommandLine() {
    }

    /** @return the process exit code */
    public static int run(List<String> args, PrintStream out, PrintStream err) {
        String endpoint = "unix:///csi/csi.sock";
        String timeout = "2m";
        List<String> positional = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            String arg = args.get(i);
            if ((arg.equals("--endpoint") || arg.equals("--timeout")) && i + 1 < args.size()) {
                if (arg.equals("--endpoint")) {
                    endpoint = args.get(++i);
                } else {
                    timeout = args.get(++i);
                }
            } else if (arg.startsWith("--endpoint=")) {
                endpoint = arg.substring("--endpoint=".length());
            } else if (arg.startsWith("--timeout=")) {
                timeout = arg.substring("--timeout=".length());
            } else if (arg.equals("--help") || arg.equals("-h")) {
                out.print(USAGE.formatted(methodNames()));
                return 0;
            } else {
                positional.add(arg);
            }
        }
        if (positional.isEmpty() || positional.size() > 2) {
            err.print(USAGE.formatted(methodNames()));
            return 2;
        }
        try {
            MethodDescriptor<Message, Message> method = find(positional.get(0));
            Message request = parseRequest(method, positional.size() == 2 ? positional.get(1) : "");
            Path socket = FlagParser.socketPathOf(endpoint);
            long timeoutMillis = FlagParser.durationOf("timeout", timeout).toMillis();
            return call(socket, method, request, timeoutMillis, out, err);
        } catch (IllegalArgumentException | IOException e) {
            err.println("blocknode client: " + Printable.escape(String.valueOf(e.getMessage())));
            return 2;
        }
    }

    private static int call(Path socket, MethodDescriptor<Message, Message> method, Message request,
                            long timeoutMillis, PrintStream out, PrintStream err) {
        EventLoopGroup eventLoops = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        ManagedChannel channel = UnixSocketChannels.connect(socket, eventLoops);
        try {
            Message response = ClientCalls.blockingUnaryCall(channel, method,
                    CallOptions.DEFAULT.withDeadlineAfter(timeoutMillis, TimeUnit.MILLISECONDS), request);
            out.print(TextFormat.printer().printToString(response));
            return 0;
        } catch (StatusRuntimeException e) {
            err.println(e.getStatus().getCode() + ": "
                    + Printable.escape(String.valueOf(e.getStatus().getDescription())));
            return e.getStatus().getCode().value();
        } finally {
            channel.shutdownNow();
            eventLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
    }

    @SuppressWarnings("unchecked")
    static MethodDescriptor<Message, Message> find(String name) {
        for (ServiceDescriptor service : SERVICES) {
            for (MethodDescriptor<?, ?> method : service.getMethods()) {
                if (method.getBareMethodName() != null
                        && method.getBareMethodName().toLowerCase(Locale.ROOT).equals(name.toLowerCase(Locale.ROOT))
                        && method.getType() == MethodDescriptor.MethodType.UNARY) {
                    return (MethodDescriptor<Message, Message>) method;
                }
            }
        }
        throw new IllegalArgumentException("unknown or non-unary method \"" + name + "\"; known: " + methodNames());
    }

    /** The text of a request file: a regular file (links followed), never a FIFO waited on (SmallFiles). */
    private static String readFile(Path file) throws IOException {
        return new String(SmallFiles.readRegularFollowingLinks(file, MAX_INPUT_BYTES)
                .orElseThrow(() -> new NoSuchFileException(file.toString())), StandardCharsets.UTF_8);
    }

    static Message parseRequest(MethodDescriptor<Message, Message> method, String text) throws IOException {
        String body = text.startsWith("@") ? readFile(Path.of(text.substring(1))) : text;
        Message prototype = ((MethodDescriptor.PrototypeMarshaller<Message>) method.getRequestMarshaller())
                .getMessagePrototype();
        Message.Builder builder = prototype.newBuilderForType();
        try {
            TextFormat.merge(body, builder);
        } catch (TextFormat.ParseException e) {
            throw new IllegalArgumentException("the request is not a valid "
                    + prototype.getDescriptorForType().getName() + ": " + e.getMessage());
        }
        return builder.build();
    }

    private static String methodNames() {
        List<String> names = new ArrayList<>();
        for (ServiceDescriptor service : SERVICES) {
            for (MethodDescriptor<?, ?> method : service.getMethods()) {
                if (method.getType() == MethodDescriptor.MethodType.UNARY) {
                    names.add(method.getBareMethodName());
                }
            }
        }
        return String.join(", ", names);
    }
}
