package tfhadoop.amagent;

import java.io.IOException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.LinkedHashSet;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.util.ReflectionUtils;
import org.apache.hadoop.yarn.api.ApplicationMasterProtocol;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.client.RMFailoverProxyProvider;
import org.apache.hadoop.yarn.client.RMProxy;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * ResourceManager failover proxy providers that wrap the ones configured before the agent (named
 * in the system properties {@link Agent#NO_HA_DELEGATE} / {@link Agent#HA_DELEGATE}) and behave
 * exactly as they do, except that the proxy of {@link ApplicationMasterProtocol} they hand out
 * passes each {@link AllocateResponse} to {@link PreemptionLog} before returning it.
 */
public final class WatchingProviders {
  private WatchingProviders() {}

  /** For a ResourceManager without HA (``yarn.client.failover-no-ha-proxy-provider``). */
  public static final class NoHa<T> extends Wrapping<T> {
    public NoHa() {
      super(Agent.NO_HA_DELEGATE, YarnConfiguration.DEFAULT_CLIENT_FAILOVER_NO_HA_PROXY_PROVIDER);
    }
  }

  /** For ResourceManager HA (``yarn.client.failover-proxy-provider``). */
  public static final class Ha<T> extends Wrapping<T> {
    public Ha() {
      super(Agent.HA_DELEGATE, YarnConfiguration.DEFAULT_CLIENT_FAILOVER_PROXY_PROVIDER);
    }
  }

  abstract static class Wrapping<T> implements RMFailoverProxyProvider<T> {
    private final String property;
    private final String fallback;
    private RMFailoverProxyProvider<T> delegate;
    private Class<T> protocol;
    private T real; // the delegate's proxy that ``wrapped`` stands for
    private T wrapped;

    Wrapping(String property, String fallback) {
      this.property = property;
      this.fallback = fallback;
    }

    @Override
    @SuppressWarnings("unchecked")
    public void init(Configuration conf, RMProxy<T> rmProxy, Class<T> protocol) {
      this.protocol = protocol;
      String name = System.getProperty(property, fallback);
      try {
        Class<?> cls = conf.getClassByName(name);
        delegate = (RMFailoverProxyProvider<T>) ReflectionUtils.newInstance(cls, conf);
      } catch (ClassNotFoundException e) {
        throw new IllegalStateException("tfhadoop AM agent: cannot load the proxy provider " + name, e);
      }
      delegate.init(conf, rmProxy, protocol);
    }

    @Override
    public synchronized ProxyInfo<T> getProxy() {
      ProxyInfo<T> info = delegate.getProxy();
      if (!ApplicationMasterProtocol.class.equals(protocol) || info == null || info.proxy == null) {
        return info;
      }
      if (info.proxy != real) {
        real = info.proxy;
        wrapped = watching(protocol, real, PreemptionLog.shared());
      }
      return new ProxyInfo<T>(wrapped, info.proxyInfo);
    }

    @Override
    public synchronized void performFailover(T currentProxy) {
      delegate.performFailover(currentProxy == wrapped ? real : currentProxy);
    }

    @Override
    public Class<T> getInterface() {
      return delegate.getInterface();
    }

    @Override
    public void close() throws IOException {
      delegate.close();
    }
  }

  /**
   * A proxy with every interface of ``real`` that forwards each call to it (its own exceptions
   * rethrown as they are), passing the result of ``allocate`` to ``log``.
   */
  @SuppressWarnings("unchecked")
  static <T> T watching(Class<T> protocol, final T real, final PreemptionLog log) {
    Set<Class<?>> interfaces = new LinkedHashSet<Class<?>>();
    interfaces.add(protocol);
    for (Class<?> c = real.getClass(); c != null; c = c.getSuperclass()) {
      for (Class<?> i : c.getInterfaces()) {
        interfaces.add(i);
      }
    }
    InvocationHandler handler = new InvocationHandler() {
      @Override
      public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
        Object result;
        try {
          result = method.invoke(real, args);
        } catch (InvocationTargetException e) {
          throw e.getCause();
        }
        if (result instanceof AllocateResponse) {
          log.observe((AllocateResponse) result);
        }
        return result;
      }
    };
    ClassLoader loader = protocol.getClassLoader();
    Set<Class<?>> visible = new LinkedHashSet<Class<?>>();
    for (Class<?> i : interfaces) { // a proxy class may only name interfaces its loader sees
      try {
        if (Class.forName(i.getName(), false, loader) == i) {
          visible.add(i);
        }
      } catch (ClassNotFoundException e) {
        // left out: ``real`` keeps it, the proxy does not need it
      }
    }
    return (T) Proxy.newProxyInstance(loader, visible.toArray(new Class<?>[0]), handler);
  }
}
