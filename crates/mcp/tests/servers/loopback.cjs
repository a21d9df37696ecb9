// Preloaded into server-everything's streamable HTTP server by the tests (`node --require`): its
// `app.listen(PORT)` would listen on every interface; this makes a bare-port listen bind to
// 127.0.0.1 only, so the tests never open a port to the network.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "string" && /^\d+$/.test(args[0])) {
    args[0] = Number(args[0]);
  }
  if (typeof args[0] === "number" && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
