// See formats.h. Each regex is composed from the grammar of its RFC, piece by piece.
#include "frontends/json_schema/formats.h"

namespace xg::json_schema {

namespace {

std::vector<StringFormat> BuildFormats() {
  const std::string date = R"([0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01]))";
  const std::string time =
      R"((?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\.[0-9]+)?(?:[Zz]|[+\-](?:[01][0-9]|2[0-3]):[0-5][0-9]))";
  const std::string dur_time = R"(T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))";
  const std::string duration = R"(P(?:(?:[0-9]+Y(?:[0-9]+M)?(?:[0-9]+D)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)(?:)" +
                               dur_time + ")?|" + dur_time + "|[0-9]+W)";
  const std::string label = R"([a-zA-Z0-9](?:[a-zA-Z0-9\-]{0,61}[a-zA-Z0-9])?)";
  const std::string hostname = label + R"((?:\.)" + label + ")*";
  const std::string dec_octet = R"((?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9]))";
  const std::string ipv4 = dec_octet + R"(\.)" + dec_octet + R"(\.)" + dec_octet + R"(\.)" + dec_octet;
  const std::string h16 = "[0-9a-fA-F]{1,4}";
  const std::string ls32 = "(?:" + h16 + ":" + h16 + "|" + ipv4 + ")";
  // RFC 3986's IPv6address, alternative by alternative: at most 8 groups, one '::' for one or more zero groups.
  std::string ipv6 = "(?:(?:" + h16 + ":){6}" + ls32 + "|::(?:" + h16 + ":){5}" + ls32;
  const std::string tails[] = {"(?:" + h16 + ":){4}" + ls32, "(?:" + h16 + ":){3}" + ls32,
                               "(?:" + h16 + ":){2}" + ls32, h16 + ":" + ls32, ls32, h16, ""};
  for (int k = 0; k < 7; ++k) {
    std::string head = k ? "(?:(?:" + h16 + ":){0," + std::to_string(k) + "}" + h16 + ")?" : "(?:" + h16 + ")?";
    ipv6 += "|" + head + "::" + tails[k];
  }
  ipv6 += ")";
  const std::string unreserved = R"([a-zA-Z0-9\-._~])";
  const std::string pct = "%[0-9a-fA-F]{2}";
  const std::string sub_delims = "[!$&'()*+,;=]";
  const std::string pchar = "(?:" + unreserved + "|" + pct + "|" + sub_delims + "|[:@])";
  const std::string scheme = R"([a-zA-Z][a-zA-Z0-9+\-.]*)";
  const std::string authority = "(?:(?:" + unreserved + "|" + pct + "|" + sub_delims + "|:)*@)?(?:\\[" + ipv6 +
                                "\\]|(?:" + unreserved + "|" + pct + "|" + sub_delims + ")*)(?::[0-9]*)?";
  const std::string path_abempty = "(?:/" + pchar + "*)*";
  const std::string hier = "(?://" + authority + path_abempty + "|/(?:" + pchar + "+(?:/" + pchar + "*)*)?|" +
                           pchar + "+(?:/" + pchar + "*)*)?";
  const std::string query = "(?:\\?(?:" + pchar + "|[/?])*)?(?:#(?:" + pchar + "|[/?])*)?";
  const std::string uri = scheme + ":" + hier + query;
  const std::string relative = "(?://" + authority + path_abempty + "|/(?:" + pchar + "+(?:/" + pchar + "*)*)?|(?:" +
                               unreserved + "|" + pct + "|" + sub_delims + "|@)+(?:/" + pchar + "*)*)?" + query;
  const std::string atext = R"([a-zA-Z0-9!#$%&'*+/=?^_`{|}~\-])";
  return {
      {"date", "fmt_date", date},
      {"time", "fmt_time", time},
      {"date-time", "fmt_date_time", date + "[Tt]" + time},
      {"duration", "fmt_duration", duration},
      {"email", "fmt_email", atext + R"(+(?:\.)" + atext + "+)*@" + hostname},
      {"hostname", "fmt_hostname", hostname},
      {"ipv4", "fmt_ipv4", ipv4},
      {"ipv6", "fmt_ipv6", ipv6},
      {"uuid", "fmt_uuid", "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"},
      {"uri", "fmt_uri", uri},
      {"uri-reference", "fmt_uri_reference", "(?:" + uri + "|" + relative + ")"},
      {"json-pointer", "fmt_json_pointer", "(?:/(?:[^/~]|~[01])*)*"},
  };
}

}  // namespace

const std::vector<StringFormat>& StringFormats() {
  static const std::vector<StringFormat> formats = BuildFormats();
  return formats;
}

const StringFormat* FindStringFormat(const std::string& name) {
  for (const auto& f : StringFormats()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace xg::json_schema
