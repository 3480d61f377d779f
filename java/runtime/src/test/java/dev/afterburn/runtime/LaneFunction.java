package dev.afterburn.runtime;

/** The routes of {@link LanesTest} as a function, run by {@link LanesProcessTest} through the launcher. */
public final class LaneFunction implements Handler {
    @Override
    public Response handle(Request request) throws Exception {
        return LanesTest.routes(request, null, null);
    }
}
