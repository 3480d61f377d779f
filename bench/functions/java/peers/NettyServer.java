import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/**
 * A plain Netty HTTP server, a peer of the benchmarks (bench/README.md, "Peers"), on
 * 127.0.0.1:$PORT: the pipeline Netty's own examples use (HttpServerCodec, then
 * HttpObjectAggregator, then one handler), the NIO transport, Netty's default event loop
 * threads (two per CPU the JVM sees), TCP_NODELAY. An empty body gets the greeting, any other
 * body is answered back.
 */
public final class NettyServer {
    private static final byte[] GREETING = "Hello, world!\n".getBytes(StandardCharsets.US_ASCII);

    public static void main(String[] args) throws InterruptedException {
        int port = Integer.parseInt(System.getenv().getOrDefault("PORT", "8080"));
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(NioIoHandler.newFactory());
        Channel server = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, 1024)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(1 << 20), new Handler());
                    }
                })
                .bind("127.0.0.1", port).sync().channel();
        InetSocketAddress a = (InetSocketAddress) server.localAddress();
        System.err.println("server: listening on " + a.getHostString() + ":" + a.getPort());
        server.closeFuture().sync();
    }

    private static final class Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            ByteBuf body = req.content().isReadable() ? req.content().retainedDuplicate() : Unpooled.wrappedBuffer(GREETING);
            FullHttpResponse resp = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, body);
            resp.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/plain");
            HttpUtil.setContentLength(resp, body.readableBytes());
            boolean keepAlive = HttpUtil.isKeepAlive(req);
            HttpUtil.setKeepAlive(resp, keepAlive);
            if (keepAlive) {
                ctx.writeAndFlush(resp, ctx.voidPromise());
            } else {
                ctx.writeAndFlush(resp).addListener(ChannelFutureListener.CLOSE);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
