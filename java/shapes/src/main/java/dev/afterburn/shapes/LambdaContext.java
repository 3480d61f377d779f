package dev.afterburn.shapes;

import com.amazonaws.services.lambda.runtime.ClientContext;
import com.amazonaws.services.lambda.runtime.CognitoIdentity;
import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.LambdaLogger;
import dev.afterburn.runtime.Request;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * The {@link Context} a Lambda handler is given (PROTOCOL.md §13): {@code getAwsRequestId()}
 * the request id (§5.1), {@code getRemainingTimeInMillis()} the time to the request's deadline
 * (§5.2; {@value LambdaJson#NO_DEADLINE_MS} ms, Lambda's longest timeout, without one), the
 * function's names from the {@code AWS_LAMBDA_*} environment a Lambda function has, else
 * defaults ({@code AFTERBURN_FUNCTION_NAME} or {@code function}); {@code getLogger()} writes
 * to the request's log line ({@code [request-id] text}); identity and client context null.
 */
final class LambdaContext implements Context {
    private final Request request;
    private final String functionName;
    private final Map<String, String> env;

    LambdaContext(Request request) {
        this.request = request;
        this.env = System.getenv();
        String name = env.get("AWS_LAMBDA_FUNCTION_NAME");
        if (name == null || name.isEmpty()) name = env.get("AFTERBURN_FUNCTION_NAME");
        this.functionName = name == null || name.isEmpty() ? "function" : name;
    }

    @Override
    public String getAwsRequestId() {
        return request.requestId();
    }

    @Override
    public String getLogGroupName() {
        return env.getOrDefault("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/" + functionName);
    }

    @Override
    public String getLogStreamName() {
        return env.getOrDefault("AWS_LAMBDA_LOG_STREAM_NAME", "afterburn/" + ProcessHandle.current().pid());
    }

    @Override
    public String getFunctionName() {
        return functionName;
    }

    @Override
    public String getFunctionVersion() {
        return env.getOrDefault("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST");
    }

    @Override
    public String getInvokedFunctionArn() {
        return "arn:aws:lambda:local:000000000000:function:" + functionName;
    }

    @Override
    public CognitoIdentity getIdentity() {
        return null;
    }

    @Override
    public ClientContext getClientContext() {
        return null;
    }

    @Override
    public int getRemainingTimeInMillis() {
        if (!request.hasDeadline()) return LambdaJson.NO_DEADLINE_MS;
        return (int) Math.min(request.timeRemaining().toMillis(), Integer.MAX_VALUE);
    }

    @Override
    public int getMemoryLimitInMB() {
        String size = env.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE");
        if (size != null) {
            try {
                return Integer.parseInt(size.trim());
            } catch (NumberFormatException ignored) {
                // fall through to the JVM's own limit
            }
        }
        return (int) Math.min(Runtime.getRuntime().maxMemory() >> 20, Integer.MAX_VALUE);
    }

    @Override
    public LambdaLogger getLogger() {
        return new LambdaLogger() {
            @Override
            public void log(String message) {
                request.log(message.endsWith("\n") ? message.substring(0, message.length() - 1) : message);
            }

            @Override
            public void log(byte[] message) {
                log(new String(message, StandardCharsets.UTF_8));
            }
        };
    }

    @Override
    public String toString() {
        return "LambdaContext[awsRequestId=" + request.requestId() + "]";
    }
}
