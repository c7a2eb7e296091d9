package dev.blocknode.testing;

import io.grpc.Attributes;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.Status;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * A server call that does nothing but name its method: what an interceptor under test is handed when only its own
 * behaviour matters (what it times, which thread it runs the listener on), not what reaches the client.
 */
public final class InertServerCall extends ServerCall<String, String> {

    private static final MethodDescriptor.Marshaller<String> STRINGS = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(String value) {
            return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public String parse(InputStream stream) {
            return "";
        }
    };

    private final MethodDescriptor<String, String> method;

    public InertServerCall(MethodDescriptor.MethodType type, String fullMethodName) {
        method = MethodDescriptor.<String, String>newBuilder().setType(type).setFullMethodName(fullMethodName)
                .setRequestMarshaller(STRINGS).setResponseMarshaller(STRINGS).build();
    }

    @Override
    public void request(int numMessages) {
    }

    @Override
    public void sendHeaders(Metadata headers) {
    }

    @Override
    public void sendMessage(String message) {
    }

    @Override
    public void close(Status status, Metadata trailers) {
    }

    @Override
    public boolean isCancelled() {
        return false;
    }

    @Override
    public Attributes getAttributes() {
        return Attributes.EMPTY;
    }

    @Override
    public MethodDescriptor<String, String> getMethodDescriptor() {
        return method;
    }
}
