// Sends one UDP datagram per [srcPort, dstIP, dstPort] in argv[2] (JSON), from inside the
// network namespace this process was started in (`ip netns exec`).
import dgram from 'node:dgram';

const sends = JSON.parse(process.argv[2] ?? '[]');
for (const [sport, dst, dport] of sends) {
  const s = dgram.createSocket(dst.includes(':') ? 'udp6' : 'udp4');
  await new Promise((resolve, reject) => {
    s.once('error', reject);
    s.bind(sport, () => s.send(Buffer.from('x'), dport, dst, (e) => (e ? reject(e) : resolve())));
  });
  s.close();
}
