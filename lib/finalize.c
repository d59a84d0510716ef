/* finalize.c - finalisation of every operator: from an accumulator to one
 * output element (sqrt, log, exp, division, rounding to the output dtype,
 * NaN canonicalisation, integer output and the overflow policy), and the
 * empty-set values.  Depends on the kernel interface only (kernels.h,
 * ops.h), never on reduce.c.
 *
 * Integer ReduceLogSum and ReduceLogSumExp are the exact real value
 * truncated toward zero:
 *  - LogSum: the exact sum S >= 1 (else UNDEFINED_RESULT); trunc(log S) is
 *    the number of k >= 1 with e^k < S, decided exactly against a table of
 *    floor(e^k) (e^k is irrational, so e^k < S <=> floor(e^k) < S).
 *  - LogSumExp: L = m + log S with S = sum_d n[d] e^-d >= 1 (ops.h); S is
 *    evaluated in double-double from tables of e^-d and compared with e^j
 *    in double-double, so floor(log S) is right unless S lies within about
 *    2^-100 relative of a power of e; L < 0 rounds up (toward zero) unless
 *    log S is exactly 0 (a single maximum, nothing else).
 */
#include "ops.h"

#include <inttypes.h>
#include <stdlib.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef __int128 i128;
typedef unsigned __int128 u128;

#define U128C(hi, lo) (((u128)(hi) << 64) | (u128)(lo))

/* floor(e^k), k = 0..88 (e^88 < 2^127; integer sums stay below 2^125). */
static const u128 floor_exp[89] = {
  U128C(0x0000000000000000, 0x0000000000000001),
  U128C(0x0000000000000000, 0x0000000000000002),
  U128C(0x0000000000000000, 0x0000000000000007),
  U128C(0x0000000000000000, 0x0000000000000014),
  U128C(0x0000000000000000, 0x0000000000000036),
  U128C(0x0000000000000000, 0x0000000000000094),
  U128C(0x0000000000000000, 0x0000000000000193),
  U128C(0x0000000000000000, 0x0000000000000448),
  U128C(0x0000000000000000, 0x0000000000000ba4),
  U128C(0x0000000000000000, 0x0000000000001fa7),
  U128C(0x0000000000000000, 0x000000000000560a),
  U128C(0x0000000000000000, 0x000000000000e9e2),
  U128C(0x0000000000000000, 0x0000000000027bc2),
  U128C(0x0000000000000000, 0x000000000006c02d),
  U128C(0x0000000000000000, 0x00000000001259ac),
  U128C(0x0000000000000000, 0x000000000031e199),
  U128C(0x0000000000000000, 0x000000000087975e),
  U128C(0x0000000000000000, 0x0000000001709348),
  U128C(0x0000000000000000, 0x0000000003e9e441),
  U128C(0x0000000000000000, 0x000000000aa36c7c),
  U128C(0x0000000000000000, 0x000000001ceb088b),
  U128C(0x0000000000000000, 0x000000004e9b87f6),
  U128C(0x0000000000000000, 0x00000000d5ad6dce),
  U128C(0x0000000000000000, 0x0000000244d5e676),
  U128C(0x0000000000000000, 0x000000062adfed51),
  U128C(0x0000000000000000, 0x00000010c3d39209),
  U128C(0x0000000000000000, 0x0000002d9264d2d4),
  U128C(0x0000000000000000, 0x0000007be08bdfd9),
  U128C(0x0000000000000000, 0x00000150bba37963),
  U128C(0x0000000000000000, 0x0000039355c8c638),
  U128C(0x0000000000000000, 0x000009b823857614),
  U128C(0x0000000000000000, 0x00001a6b765d8cdf),
  U128C(0x0000000000000000, 0x000047d0ff312d98),
  U128C(0x0000000000000000, 0x0000c3379a5392bc),
  U128C(0x0000000000000000, 0x000212a7c5e743de),
  U128C(0x0000000000000000, 0x0005a278886f2356),
  U128C(0x0000000000000000, 0x000f510ad0e906bb),
  U128C(0x0000000000000000, 0x0029a27f76340033),
  U128C(0x0000000000000000, 0x00712ccd185f319c),
  U128C(0x0000000000000000, 0x0133a43d282a5192),
  U128C(0x0000000000000000, 0x034441a72f2e5d51),
  U128C(0x0000000000000000, 0x08e12e446fb43125),
  U128C(0x0000000000000000, 0x1823255820115937),
  U128C(0x0000000000000000, 0x419ca8f27ae1c501),
  U128C(0x0000000000000000, 0xb25a0e369bc18ff3),
  U128C(0x0000000000000001, 0xe4cf766fe49be1b4),
  U128C(0x0000000000000005, 0x25d9ef0120f8d729),
  U128C(0x000000000000000d, 0xfe4a8f5c5dbac4a7),
  U128C(0x0000000000000026, 0x09ad5d944a9675e9),
  U128C(0x0000000000000067, 0x65c0422109427e1d),
  U128C(0x0000000000000119, 0x103e4080b45664d7),
  U128C(0x00000000000002fc, 0x0279a2288c16a04c),
  U128C(0x000000000000081c, 0xcb294703a5f5e7eb),
  U128C(0x000000000000160d, 0x4f6fdac7308d3d7a),
  U128C(0x0000000000003bf1, 0x8b5e2f7475b81c2e),
  U128C(0x000000000000a2f1, 0x83b6b0b4c5b1baa2),
  U128C(0x000000000001baed, 0x16a6e0da7307177f),
  U128C(0x000000000004b3ff, 0x7faf78684c6610dc),
  U128C(0x00000000000cc8ce, 0x55f7e5b48735190e),
  U128C(0x000000000022c068, 0xb932a7c596f3d1ee),
  U128C(0x00000000005e76f2, 0x7714f19924caf2a6),
  U128C(0x000000000100c810, 0xd4640970ca837586),
  U128C(0x0000000002ba0127, 0x298b84ef4d2d5d54),
  U128C(0x0000000007695f7a, 0x3c41e9ee62372708),
  U128C(0x000000001425982c, 0xf597cd205ce3d5b4),
  U128C(0x0000000036c3cb94, 0x74bc6165e1407e52),
  U128C(0x0000000094ddc12e, 0xfe7c35d5f0ca2fac),
  U128C(0x0000000194a90db0, 0xd6fe27ef7cda73ea),
  U128C(0x000000044bfb1d65, 0x61bf2a7476d7e1ec),
  U128C(0x0000000bae0ee234, 0xf1d7a598238e5e34),
  U128C(0x0000001fbfd219c4, 0x3b04730797e2bfec),
  U128C(0x000000564db51386, 0x85170118fcfed235),
  U128C(0x000000ea98ec53f7, 0x3ce350b40b9b7d41),
  U128C(0x0000027db3a4945a, 0xa368d9c27f9d5b01),
  U128C(0x000006c573f96db8, 0x5edc6f75a14ce875),
  U128C(0x00001268038c2c0e, 0x003733d798125786),
  U128C(0x0000320894e6a8ba, 0x8fbeef9ef8242884),
  U128C(0x0000880155b10c59, 0xbe67c82472ddaac5),
  U128C(0x000171b3540cbf92, 0x0971ed0e2388a8fc),
  U128C(0x0003ecf33d538829, 0x3812662cd92fe498),
  U128C(0x000aabbcdcc279f5, 0x9e45281da5471244),
  U128C(0x001d01a210c44aa3, 0x9e108adb3da26c0a),
  U128C(0x004ed8f6a3a44841, 0x011f780919abcf38),
  U128C(0x00d6546b5808b5be, 0x7bf3f7924788d2c5),
  U128C(0x02469bd3c18e9d13, 0xdbd3297ca0d90786),
  U128C(0x062fb1d40f291dd6, 0x226be9bba10745e7),
  U128C(0x10d0eda9796b9027, 0xb9e057916cbdcd86),
  U128C(0x2db602308ee48a83, 0xbbc11aaa51a6f530),
  U128C(0x7c415b71efc8b4f7, 0x83b55d856f1407e2),
};

/* e^-d as double-double (hi, lo), d = 0..RD__LSE_D. */
static const double exp_neg[RD__LSE_D + 1][2] = {
  { 0x1.0000000000000p+0, 0x0.0p+0 },
  { 0x1.78b56362cef38p-2, -0x1.ca8a4270fadf5p-57 },
  { 0x1.152aaa3bf81ccp-3, -0x1.809224547b4bfp-57 },
  { 0x1.97db0ccceb0afp-5, -0x1.b5becfe6e37bfp-60 },
  { 0x1.2c155b8213cf4p-6, 0x1.dfa2bc04cb0acp-60 },
  { 0x1.b993fe00d5376p-8, 0x1.c45c249149a5cp-64 },
  { 0x1.44e51f113d4d6p-9, -0x1.3fa2fdc1fffbdp-64 },
  { 0x1.de16b9c24a98fp-11, -0x1.5199a20550217p-65 },
  { 0x1.5fc21041027adp-12, -0x1.100cae61fc046p-66 },
  { 0x1.02cf22526545ap-13, -0x1.baa4930fbe89fp-67 },
  { 0x1.7cd79b5647c9bp-15, -0x1.8e936e2abd9dep-69 },
  { 0x1.18354238f6764p-16, 0x1.e4f7e77977d57p-75 },
  { 0x1.9c54c3b43bc8bp-18, -0x1.cde27c98071b8p-75 },
  { 0x1.2f6053b981d98p-19, 0x1.a10a92959636ap-74 },
  { 0x1.be6c6fdb01612p-21, 0x1.0dcce17ab3189p-77 },
  { 0x1.4875ca227ec38p-22, 0x1.7f1c5b1f75e66p-79 },
  { 0x1.e355bbaee85cbp-24, -0x1.2cd0460668bb8p-79 },
  { 0x1.639e3175a689dp-25, -0x1.0998f1158bcc0p-79 },
  { 0x1.05a628c699fa1p-26, -0x1.bbdc7542d4a05p-81 },
  { 0x1.81056ff2c5772p-28, -0x1.6203c1b890129p-82 },
  { 0x1.1b48655f37267p-29, -0x1.9fb4baeafe811p-85 },
  { 0x1.a0db0d0ddb3ecp-31, 0x1.0455b91e979d7p-86 },
  { 0x1.32b48bf117da2p-32, 0x1.4f3bc17da1645p-86 },
  { 0x1.c3527e433fab1p-34, 0x1.7eb4c3b7ab339p-90 },
  { 0x1.4c1078fe9228ap-35, 0x1.436addb03221bp-92 },
  { 0x1.e8a37a45fc32ep-37, -0x1.7e71b11e189cbp-92 },
  { 0x1.67852a7007e42p-38, -0x1.e1c9c22a66d9fp-92 },
  { 0x1.0885298767e9ap-39, 0x1.1bc77ef31e402p-94 },
  { 0x1.853f01d6d53bap-41, -0x1.49be7c3750c39p-100 },
  { 0x1.1e642baeb84a0p-42, 0x1.42bbc1e73b1ecp-96 },
  { 0x1.a56e0c2ac7f75p-44, -0x1.578158e15ff84p-99 },
  { 0x1.36121e24d3bbap-45, -0x1.da1cefd9b76adp-99 },
  { 0x1.c8464f7616468p-47, 0x1.e299a01244879p-103 },
  { 0x1.4fb547c775da8p-48, -0x1.e40f737eee33bp-102 },
  { 0x1.ee001eed62aa0p-50, -0x1.5c38e0860fca2p-105 },
  { 0x1.6b7719a59f0e0p-51, 0x1.53dc2ca571670p-106 },
  { 0x1.0b6c3afdde064p-52, -0x1.fe4bbfcd1d1a9p-106 },
  { 0x1.898471fca6055p-54, -0x1.89525dddd5ca7p-114 },
  { 0x1.2188ad6ae3303p-55, 0x1.bb01ef4917a06p-112 },
  { 0x1.aa0de4bf35b38p-57, -0x1.61c26e015c13dp-113 },
  { 0x1.39792499b1a24p-58, 0x1.4aa50a41ade9fp-113 },
  { 0x1.cd480a1b74820p-60, -0x1.14715b4373074p-115 },
  { 0x1.536452ee2f75cp-61, -0x1.7fbc0f2f04b4dp-117 },
  { 0x1.f36bd37f42f3ep-63, 0x1.7d826616688cdp-119 },
  { 0x1.6f741de1748ecp-64, -0x1.41278269671d9p-120 },
  { 0x1.0e5b73d1ff53dp-65, -0x1.5f06aa8633b42p-123 },
  { 0x1.8dd5e1bb09d7ep-67, 0x1.b24dd5ddb6dccp-121 },
  { 0x1.24b6031b49bdap-68, 0x1.c1301831eba4dp-122 },
  { 0x1.aebabae3a41b5p-70, -0x1.0702a2463f3f1p-124 },
  { 0x1.3ce9b9de78f85p-71, 0x1.57c5ae581a407p-128 },
  { 0x1.d257d547e083fp-73, -0x1.47129a7319d46p-128 },
  { 0x1.571db733a9d61p-74, 0x1.a03596c7667efp-128 },
  { 0x1.f8e6c24b5592ep-76, 0x1.a10ef93d678f0p-131 },
  { 0x1.737c5645114b5p-77, 0x1.4b0189dcc4118p-131 },
  { 0x1.1152eaeb73c08p-78, -0x1.c342cd092a741p-134 },
  { 0x1.923372c67a074p-80, -0x1.00c09efa25c9bp-134 },
  { 0x1.27ec458c65e3cp-81, 0x1.21e214a0cbb6dp-135 },
  { 0x1.b374b315f87c1p-83, 0x1.73111c9d44d09p-138 },
  { 0x1.4063f8cc8bb98p-84, 0x1.901166b118c6bp-138 },
  { 0x1.d775d87da854dp-86, -0x1.bfb996ad8aaebp-141 },
  { 0x1.5ae191a99585ap-87, 0x1.ae0ed519077f4p-142 },
  { 0x1.fe7116182e9ccp-89, 0x1.c4e516bad59a3p-143 },
  { 0x1.778fe2497184cp-90, 0x1.6e5850b13aaefp-145 },
  { 0x1.1452b7723aed2p-91, 0x1.11c9d61a697bdp-146 },
  { 0x1.969d47321e4ccp-93, -0x1.5034b5fe3da71p-147 },
  { 0x1.2b2b8dd05b318p-94, 0x1.b460756a6e88fp-148 },
  { 0x1.b83bf23a9a9ebp-96, -0x1.8aca80eb0a3d0p-151 },
  { 0x1.43e7fc88b8056p-97, -0x1.f579969437eccp-152 },
  { 0x1.dca23bae16424p-99, 0x1.97faa3a8faadbp-153 },
  { 0x1.5eafffb34ba31p-100, 0x1.232b940518789p-157 },
  { 0x1.02057d1245cebp-101, -0x1.3abbdecc5777dp-158 },
  { 0x1.7baee1bffa80bp-103, 0x1.f95e6d9887b31p-159 },
  { 0x1.175af0cf60ec5p-104, 0x1.3c73fa4f606fap-159 },
  { 0x1.9b138170d6bfep-106, 0x1.7a4850e292019p-161 },
  { 0x1.2e73f53fba844p-107, 0x1.16dc6c4dad9a7p-161 },
  { 0x1.bd109d9d94bdap-109, 0x1.76b0537fd01dbp-163 },
  { 0x1.4775e0840bfddp-110, 0x1.4e0606a006cc5p-164 },
  { 0x1.e1dd273aa8a4ap-112, -0x1.3cefc63b9345fp-167 },
  { 0x1.62891f06b3450p-113, -0x1.f2cc2f9ecf693p-169 },
  { 0x1.04da4d1452919p-114, -0x1.f0961772d56ffp-169 },
  { 0x1.7fd974d372e45p-116, -0x1.e423729d4c8bbp-170 },
};

/* e^j as double-double, j = 0..48 (S < 2^62 gives log S < 43). */
static const double exp_pos[49][2] = {
  { 0x1.0000000000000p+0, 0x0.0p+0 },
  { 0x1.5bf0a8b145769p+1, 0x1.4d57ee2b1013ap-53 },
  { 0x1.d8e64b8d4ddaep+2, -0x1.9e62e22efca4cp-53 },
  { 0x1.415e5bf6fb106p+4, -0x1.a568407591768p-53 },
  { 0x1.b4c902e273a58p+5, 0x1.9e35b4eff6e4fp-49 },
  { 0x1.28d389970338fp+7, 0x1.f66faad9235acp-49 },
  { 0x1.936dc5690c08fp+8, 0x1.bd4d728fcb999p-47 },
  { 0x1.122885aaeddaap+10, 0x1.bc7e802a24decp-44 },
  { 0x1.749ea7d470c6ep+11, -0x1.e83fe3ef6afd4p-46 },
  { 0x1.fa7157c470f82p+12, -0x1.e4d50f21f5ac5p-43 },
  { 0x1.5829dcf950560p+14, -0x1.83e055cfea4bbp-40 },
  { 0x1.d3c4488ee4f7fp+15, 0x1.f7b8937dac77dp-40 },
  { 0x1.3de1654d37c9ap+17, 0x1.75002e232b908p-38 },
  { 0x1.b00b5916ac955p+18, 0x1.aa63a6c655d68p-37 },
  { 0x1.259ac48bf05d7p+20, -0x1.07e45cbbee1cfp-36 },
  { 0x1.8f0ccafad2a87p+21, -0x1.0e8d00e46995ap-35 },
  { 0x1.0f2ebd0a80020p+23, 0x1.2488fc5c220adp-31 },
  { 0x1.709348c0ea4f9p+24, -0x1.8c0b379ab7956p-31 },
  { 0x1.f4f22091940bdp+25, 0x1.85611a95e0b5cp-30 },
  { 0x1.546d8f9ed26e1p+27, 0x1.ca058cc7bba0bp-27 },
  { 0x1.ceb088b68e804p+28, 0x1.0c4bcbfcacce6p-31 },
  { 0x1.3a6e1fd9eecfdp+30, 0x1.5976a7206a588p-24 },
  { 0x1.ab5adb9c43600p+31, -0x1.f9132e536ac1ep-23 },
  { 0x1.226af33b1fdc1p+33, -0x1.6a1ec7c1458dbp-21 },
  { 0x1.8ab7fb5475fb7p+34, 0x1.9bcd1d08231dap-21 },
  { 0x1.0c3d3920962c9p+36, -0x1.d541354634a5fp-18 },
  { 0x1.6c932696a6b5dp+37, -0x1.7d58839c0b099p-17 },
  { 0x1.ef822f7f6731dp+38, -0x1.db6543ee2eb82p-16 },
  { 0x1.50bba3796379ap+40, 0x1.3edab5ae0a77cp-14 },
  { 0x1.c9aae4631c056p+41, 0x1.58c6c7f9454bep-14 },
  { 0x1.370470aec28edp+43, -0x1.85e0eff0462d6p-11 },
  { 0x1.a6b765d8cdf6dp+44, -0x1.2071ce05a530ep-11 },
  { 0x1.1f43fcc4b662cp+46, 0x1.f611e21006108p-8 },
  { 0x1.866f34a725782p+47, 0x1.166f9ad353055p-9 },
  { 0x1.0953e2f3a1ef7p+49, 0x1.a39ee1d8390e3p-8 },
  { 0x1.689e221bc8d5bp+50, -0x1.6652eb4563764p-6 },
  { 0x1.ea215a1d20d76p+51, 0x1.d120d789d7fa4p-3 },
  { 0x1.4d13fbb1a001ap+53, -0x1.61e883636a03ep-1 },
  { 0x1.c4b334617cc67p+54, 0x1.c33badbaa0267p-3 },
  { 0x1.33a43d282a519p+56, 0x1.7a0fcabea251ap+1 },
  { 0x1.a220d397972ebp+57, -0x1.d2f27be2e954ap+3 },
  { 0x1.1c25c88df6862p+59, 0x1.29c803c020ec6p+5 },
  { 0x1.8232558201159p+60, 0x1.bb284eabdad2cp+5 },
  { 0x1.0672a3c9eb871p+62, 0x1.0179760d0353ap+8 },
  { 0x1.64b41c6d37832p+63, -0x1.861a37a868fa5p+3 },
  { 0x1.e4cf766fe49bep+64, 0x1.b408e878b3787p+8 },
  { 0x1.49767bc0483e3p+66, 0x1.7292236d41b2ap+12 },
  { 0x1.bfc951eb8bb76p+67, -0x1.dac5b6ae6071bp+13 },
  { 0x1.304d6aeca254bp+69, 0x1.d7a5e2eb149ebp+14 },
};

static void i128_decimal(i128 v, char *buf, size_t len)
{
  char tmp[48];
  size_t n = 0, k = 0;
  u128 u = v < 0 ? (u128)0 - (u128)v : (u128)v;
  do {
    tmp[n++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u);
  if (v < 0 && k + 1 < len)
    buf[k++] = '-';
  while (n > 0 && k + 1 < len)
    buf[k++] = tmp[--n];
  buf[k] = '\0';
}

static const char *op_name(const struct rd__final *f)
{
  const char *n = rd_op_name(f->op);
  return n ? n : "?";
}

/* ------------------------------------------------------------------ */
/* Integer output                                                     */
/* ------------------------------------------------------------------ */

static void int_range(int dt, i128 *lo, i128 *hi)
{
  switch (dt) {
  case RD_INT8:
    *lo = INT8_MIN;
    *hi = INT8_MAX;
    break;
  case RD_UINT8:
  case RD_BOOL:
    *lo = 0;
    *hi = UINT8_MAX;
    break;
  case RD_INT16:
    *lo = INT16_MIN;
    *hi = INT16_MAX;
    break;
  case RD_UINT16:
    *lo = 0;
    *hi = UINT16_MAX;
    break;
  case RD_INT32:
    *lo = INT32_MIN;
    *hi = INT32_MAX;
    break;
  case RD_UINT32:
    *lo = 0;
    *hi = UINT32_MAX;
    break;
  case RD_INT64:
    *lo = INT64_MIN;
    *hi = INT64_MAX;
    break;
  default:
    *lo = 0;
    *hi = UINT64_MAX;
    break;
  }
}

static void put_int(int dt, uint64_t bits, void *dst)
{
  switch (rd_dtype_size(dt)) {
  case 1: {
    uint8_t u = (uint8_t)bits;
    memcpy(dst, &u, 1);
    break;
  }
  case 2: {
    uint16_t u = (uint16_t)bits;
    memcpy(dst, &u, 2);
    break;
  }
  case 4: {
    uint32_t u = (uint32_t)bits;
    memcpy(dst, &u, 4);
    break;
  }
  default: memcpy(dst, &bits, 8); break;
  }
}

int rd__int_out(const struct rd__final *f, i128 v, int over, int neg,
                uint64_t wrap, void *dst, uint64_t o, struct rd_error *err)
{
  i128 lo, hi;
  int dt = f->out_dtype;
  int_range(dt, &lo, &hi);
  if (!over && v >= lo && v <= hi) {
    put_int(dt, (uint64_t)v, dst);
    return 0;
  }
  if (!over) {
    neg = v < 0;
    wrap = (uint64_t)v;
  }
  if (f->overflow == RD_OVERFLOW_ERROR) {
    char dec[48];
    if (over)
      snprintf(dec, sizeof dec, "%s(more than 2^128 in magnitude)",
               neg ? "-" : "");
    else
      i128_decimal(v, dec, sizeof dec);
    return rd__set_err(
      err, RD_E_OVERFLOW,
      "%s: output[%" PRIu64 "] = %s does "
      "not fit %s (overflow policy \"error\"; use \"saturate\" "
      "or \"wrap\")",
      op_name(f), o, dec, rd_dtype_name(dt));
  }
  if (f->overflow == RD_OVERFLOW_SATURATE)
    put_int(dt, (uint64_t)(neg ? lo : hi), dst);
  else
    put_int(dt, wrap, dst); /* two's complement: the low bits */
  return 0;
}

static int undefined(const struct rd__final *f, uint64_t o,
                     struct rd_error *err, const char *why)
{
  return rd__set_err(err, RD_E_UNDEFINED,
                     "%s: output[%" PRIu64 "] has no %s "
                     "value: %s",
                     op_name(f), o, rd_dtype_name(f->out_dtype), why);
}

/* ------------------------------------------------------------------ */
/* Integer LogSum and LogSumExp                                       */
/* ------------------------------------------------------------------ */

/* trunc(log S) for S >= 1, exactly. */
static int64_t ilog(i128 s)
{
  int64_t k = 0;
  while (k + 1 < 89 && (i128)floor_exp[k + 1] < s)
    k++;
  return k;
}

/* (a, b) compared as double-doubles: -1, 0, 1. */
static int dd_cmp(double ah, double al, double bh, double bl)
{
  double d = (ah - bh) + (al - bl);
  if (ah != bh) {
    /* exact difference of the high parts, then the low parts */
    double s = ah - bh, e = (ah - s) - bh;
    d = s + (e + (al - bl));
  }
  return d > 0 ? 1 : d < 0 ? -1 : 0;
}

static int ilse_final(const struct rd__final *f, const struct rd__acc_ilse *a,
                      void *dst, uint64_t o, struct rd_error *err)
{
  double hi = 0, lo = 0;
  int64_t j;
  int exact_one;
  i128 r;
  if (a->any == 0)
    return undefined(f, o, err,
                     "the log of the sum of exponentials of an "
                     "empty set is -inf");
  /* S = sum n[d] e^-d, smallest terms first. */
  for (int d = RD__LSE_D; d >= 0; d--) {
    double nh, nl, ph, pe, s, e;
    if (a->n[d] == 0)
      continue;
    nh = (double)a->n[d];
    nl = (double)(int64_t)(a->n[d] - (uint64_t)nh); /* exact remainder */
    ph = nh * exp_neg[d][0];
    pe = fma(nh, exp_neg[d][0], -ph) + nh * exp_neg[d][1] + nl * exp_neg[d][0];
    s = hi + ph;
    {
      double bb = s - hi;
      e = (hi - (s - bb)) + (ph - bb);
    }
    hi = s;
    lo += e + pe;
  }
  {
    double s = hi + lo;
    lo = lo - (s - hi);
    hi = s;
  }
  j = (int64_t)floor(log(hi));
  if (j < 0)
    j = 0;
  if (j > 47)
    j = 47;
  while (j + 1 <= 48 &&
         dd_cmp(hi, lo, exp_pos[j + 1][0], exp_pos[j + 1][1]) >= 0)
    j++;
  while (j > 0 && dd_cmp(hi, lo, exp_pos[j][0], exp_pos[j][1]) < 0)
    j--;
  exact_one = a->n[0] == 1 && !a->dropped;
  for (int d = 1; exact_one && d <= RD__LSE_D; d++)
    exact_one = a->n[d] == 0;
  r = a->m + j;
  if (r < 0 && !exact_one)
    r += 1; /* toward zero: L is in (r, r + 1) */
  return rd__int_out(f, r, 0, 0, 0, dst, o, err);
}

/* ------------------------------------------------------------------ */
/* ReduceL2 and ReduceSumSquare (the original classes of kernels.h)    */
/* ------------------------------------------------------------------ */

struct u192 {
  uint64_t w[3]; /* little-endian limbs */
};

static int u192_le(const struct u192 *a, const struct u192 *b)
{
  for (int i = 2; i >= 0; i--)
    if (a->w[i] != b->w[i])
      return a->w[i] < b->w[i];
  return 1;
}

static void u192_add(struct u192 *a, const struct u192 *b)
{
  u128 c = 0;
  for (int i = 0; i < 3; i++) {
    c += (u128)a->w[i] + b->w[i];
    a->w[i] = (uint64_t)c;
    c >>= 64;
  }
}

static void u192_sub(struct u192 *a, const struct u192 *b) /* a >= b */
{
  uint64_t borrow = 0;
  for (int i = 0; i < 3; i++) {
    uint64_t x = a->w[i], y = b->w[i];
    uint64_t d = x - y - borrow;
    borrow = (x < y) || (x - y < borrow);
    a->w[i] = d;
  }
}

static void u192_shr(struct u192 *a, unsigned s) /* 0 < s < 64 */
{
  a->w[0] = (a->w[0] >> s) | (a->w[1] << (64 - s));
  a->w[1] = (a->w[1] >> s) | (a->w[2] << (64 - s));
  a->w[2] >>= s;
}

static uint64_t isqrt_u128(u128 v)
{
  u128 r;
  double est;
  if (v == 0)
    return 0;
  if ((uint64_t)(v >> 64) == 0) {
    /* The common case, without the 128-bit division: est < 2^32 is within
     * one of floor(sqrt(v)) (relative error about 2^-52), and the exact
     * checks below fix it. */
    uint64_t q = (uint64_t)(sqrt((double)(uint64_t)v));
    r = q;
    while (r * r > v)
      r--;
    while ((r + 1) * (r + 1) <= v)
      r++;
    return (uint64_t)r;
  }
  est = sqrt((double)v);
  r = est >= 0x1p64 ? UINT64_MAX : (u128)est;
  if (r == 0)
    r = 1;
  r = (r + v / r) / 2; /* one Newton step: the error is now below 1 */
  if (r > UINT64_MAX)
    r = UINT64_MAX;
  while (r * r > v)
    r--;
  while (r < UINT64_MAX && (r + 1) * (r + 1) <= v)
    r++;
  return (uint64_t)r;
}

/* floor(sqrt(v)), digit by digit; exact for the full 192-bit range. */
static struct u192 isqrt_u192(struct u192 v)
{
  struct u192 res = { { 0, 0, 0 } }, bit = { { 0, 0, 0 } }, t;
  int top;
  if (v.w[2] == 0) {
    res.w[0] = isqrt_u128(((u128)v.w[1] << 64) | v.w[0]);
    return res;
  }
  top = 128 + 63 - __builtin_clzll(v.w[2]);
  top &= ~1; /* highest power of four <= v */
  bit.w[top / 64] = (uint64_t)1 << (top % 64);
  for (;;) {
    t = res;
    u192_add(&t, &bit);
    if (u192_le(&t, &v)) {
      u192_sub(&v, &t);
      u192_shr(&res, 1);
      u192_add(&res, &bit);
    } else {
      u192_shr(&res, 1);
    }
    if (bit.w[0] == 1 && bit.w[1] == 0 && bit.w[2] == 0)
      break;
    u192_shr(&bit, 2);
  }
  return res;
}

static void u192_decimal(struct u192 v, char *buf, size_t len)
{
  char tmp[64];
  size_t n = 0;
  do {
    u128 rem = 0;
    for (int i = 2; i >= 0; i--) {
      u128 cur = (rem << 64) | v.w[i];
      v.w[i] = (uint64_t)(cur / 10);
      rem = cur % 10;
    }
    tmp[n++] = (char)('0' + (int)rem);
  } while (v.w[0] | v.w[1] | v.w[2]);
  if (n >= len)
    n = len - 1;
  for (size_t i = 0; i < n; i++)
    buf[i] = tmp[n - 1 - i];
  buf[n] = '\0';
}

static struct u192 acc_int(enum rd__acc_class cls, const void *acc)
{
  struct u192 v = { { 0, 0, 0 } };
  if (cls == RD__ACC_U128) {
    u128 a;
    memcpy(&a, acc, sizeof a);
    v.w[0] = (uint64_t)a;
    v.w[1] = (uint64_t)(a >> 64);
  } else {
    const struct rd__u192 *a = acc;
    v.w[0] = (uint64_t)a->lo;
    v.w[1] = (uint64_t)(a->lo >> 64);
    v.w[2] = a->hi;
  }
  return v;
}

/* The low 32 or 64 bits of an integer output, in the output's width. */
static void store_low(void *dst, int bits, uint64_t low)
{
  if (bits == 32) {
    uint32_t u = (uint32_t)low;
    memcpy(dst, &u, sizeof u);
  } else {
    memcpy(dst, &low, sizeof low);
  }
}

/* The output of ReduceL2 / ReduceSumSquare, exactly as before the operator
 * table (its bits are pinned by tests/unit/test_golden.c). */
static int sq_final(const struct rd__final *f, const void *acc, void *dst,
                    uint64_t o, struct rd_error *err)
{
  int l2 = f->op == RD_OP_L2;
  enum rd__acc_class cls = (enum rd__acc_class)f->acc_class;
  /* the four integer dtypes of the class (the table lookup of
   * rd_dtype_size() cost more than the rest of a 64-bit output) */
  size_t esz = f->dtype == RD_INT64 || f->dtype == RD_UINT64 ? 8 : 4;

  if (cls == RD__ACC_F64 || cls == RD__ACC_BLUE) {
    rd__float_store(f->dtype, rd__acc_value(cls, acc, l2), dst);
    return 0;
  }

  struct u192 v = acc_int(cls, acc), max = { { 0, 0, 0 } };
  int bits = (int)esz * 8;
  int is_signed = f->dtype == RD_INT32 || f->dtype == RD_INT64;
  uint64_t low;
  max.w[0] = bits == 64 ? UINT64_MAX : UINT32_MAX;
  if (is_signed)
    max.w[0] >>= 1;
  if (v.w[1] == 0 && v.w[2] == 0) {
    /* The common case in 64 bits: the same value as below. */
    low = l2 ? isqrt_u128(v.w[0]) : v.w[0];
    if (low <= max.w[0]) {
      store_low(dst, bits, low);
      return 0;
    }
  }
  if (l2)
    v = isqrt_u192(v);
  low = v.w[0];
  if (!u192_le(&v, &max)) {
    if (f->overflow == RD_OVERFLOW_ERROR) {
      char dec[64];
      u192_decimal(v, dec, sizeof dec);
      return rd__set_err(
        err, RD_E_OVERFLOW,
        "output[%" PRIu64 "] = %s does not "
        "fit %s (overflow policy \"error\"; use \"saturate\" or "
        "\"wrap\")",
        o, dec, rd_dtype_name(f->dtype));
    }
    if (f->overflow == RD_OVERFLOW_SATURATE)
      low = max.w[0];
    /* wrap: the low bits, reinterpreted as two's complement below. */
  }
  store_low(dst, bits, low);
  return 0;
}

/* ------------------------------------------------------------------ */
/* Every operator                                                     */
/* ------------------------------------------------------------------ */

/* The double value of a float sum accumulator (SUMD or SUMDD), divided by
 * `div` when div > 0 (one rounding: compensated for double-double). */
static double float_sum(const struct rd__final *f, const void *acc,
                        uint64_t div)
{
  if (f->family == RD__F_SUMDD) {
    const struct rd__acc_dd *a = acc;
    double q, r, n = (double)div;
    if (a->sp != 0 || isnan(a->sp))
      return div ? a->sp / n : a->sp;
    if (!div)
      return a->hi + a->lo;
    q = a->hi / n;
    r = fma(-q, n, a->hi) + a->lo;
    return q + r / n;
  } else {
    double v;
    memcpy(&v, acc, sizeof v);
    return div ? v / (double)div : v;
  }
}

static int key_out(const struct rd__final *f, const struct rd__acc_key *a,
                   void *dst, uint64_t o, struct rd_error *err)
{
  int dt = f->out_dtype;
  if (dt == RD_FLOAT32 || dt == RD_FLOAT64 || dt == RD_FLOAT16 ||
      dt == RD_BFLOAT16) {
    rd__float_store(dt, a->nan ? NAN : rd__fkey_value(a->key), dst);
    return 0;
  }
  if (dt == RD_UINT64)
    return rd__int_out(f, (i128)((uint64_t)a->key ^ ((uint64_t)1 << 63)), 0, 0,
                       0, dst, o, err);
  return rd__int_out(f, (i128)a->key, 0, 0, 0, dst, o, err);
}

static int prod_out(const struct rd__final *f, const struct rd__acc_prod *a,
                    void *dst)
{
  double v;
  if (a->nan || (a->zero && a->inf))
    v = NAN;
  else if (a->inf)
    v = INFINITY;
  else if (a->zero)
    v = 0;
  else if (a->e > 4000)
    v = INFINITY;
  else if (a->e < -4000)
    v = 0;
  else
    v = ldexp(a->hi + a->lo, (int)a->e);
  if (a->neg && !isnan(v))
    v = -v;
  rd__float_store(f->out_dtype, v, dst);
  return 0;
}

static int iprod_out(const struct rd__final *f, const struct rd__acc_iprod *a,
                     void *dst, uint64_t o, struct rd_error *err)
{
  const u128 i128_max = ((u128)1 << 127) - 1;
  if (a->zero)
    return rd__int_out(f, 0, 0, 0, 0, dst, o, err);
  if (a->over || a->mag > i128_max + (u128)a->neg)
    return rd__int_out(f, 0, 1, (int)a->neg, a->wrap, dst, o, err);
  return rd__int_out(f, a->neg ? -(i128)(a->mag - 1) - 1 : (i128)a->mag, 0, 0,
                     0, dst, o, err);
}

static int lse_out(const struct rd__final *f, const struct rd__acc_lse *a,
                   void *dst)
{
  double v;
  if (a->nan)
    v = NAN;
  else if (a->posinf)
    v = INFINITY;
  else if (a->m == -INFINITY)
    v = -INFINITY;
  else
    v = a->m + log1p((a->hi - 1.0) + a->lo); /* sum >= 1 */
  rd__float_store(f->out_dtype, v, dst);
  return 0;
}

int rd__finalize(const struct rd__final *f, const void *acc, void *dst,
                 uint64_t o, struct rd_error *err)
{
  enum rd__fin fin = f->row->fin;
  switch (f->family) {
  case RD__F_SQ: return sq_final(f, acc, dst, o, err);
  case RD__F_SUMD:
  case RD__F_SUMDD: {
    double v = float_sum(f, acc, fin == RD__FIN_MEAN ? f->count : 0);
    if (fin == RD__FIN_MEAN && f->count == 0)
      v = NAN; /* 0/0 */
    else if (fin == RD__FIN_LOG)
      v = log(v);
    rd__float_store(f->out_dtype, v, dst);
    return 0;
  }
  case RD__F_ISUM: {
    i128 s;
    memcpy(&s, acc, sizeof s);
    if (fin == RD__FIN_MEAN) {
      if (f->count == 0)
        return undefined(f, o, err, "the mean of an empty set is NaN");
      return rd__int_out(f, s / (i128)f->count, 0, 0, 0, dst, o, err);
    }
    if (fin == RD__FIN_LOG) {
      if (f->count == 0)
        return undefined(f, o, err,
                         "the log of the sum of an empty set is "
                         "-inf");
      if (s == 0)
        return undefined(f, o, err, "the sum is 0 and log 0 is -inf");
      if (s < 0)
        return undefined(f, o, err,
                         "the sum is negative and its log is "
                         "NaN");
      return rd__int_out(f, ilog(s), 0, 0, 0, dst, o, err);
    }
    return rd__int_out(f, s, 0, 0, 0, dst, o, err);
  }
  case RD__F_LSE: return lse_out(f, acc, dst);
  case RD__F_ILSE: return ilse_final(f, acc, dst, o, err);
  case RD__F_PROD: return prod_out(f, acc, dst);
  case RD__F_IPROD: return iprod_out(f, acc, dst, o, err);
  case RD__F_MAXMIN: return key_out(f, acc, dst, o, err);
  case RD__F_ARG: {
    const struct rd__acc_arg *a = acc;
    int64_t idx;
    if (a->count == 0)
      return undefined(f, o, err,
                       "the reduced axis has length 0, so there "
                       "is no index to return");
    idx = a->nan >= 0 ? a->nan : a->idx;
    memcpy(dst, &idx, sizeof idx);
    return 0;
  }
  default:
    return rd__set_err(err, RD_E_INVALID, "%s: no finalisation for family %d",
                       op_name(f), f->family);
  }
}
